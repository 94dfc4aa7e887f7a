#!/bin/bash
# errors-as-data (issue 35.4, commits 8248eeb, 325850d): the CUDA kernels' error replies are [code, fields]
# now (reply.cuh rg_reply_text, residency.cuh rg_res_reply_text with ResidencyHostBlock.failureId). On a GPU:
# - test/persistence/bad-row.test.ts, lane 'cuda (residency)': a failed load's StateLoadError (same object)
#   reaches the ask and the parked tell through the kernel's STATE_LOAD reply;
# - packages/cuda-backend/test/backend.test.ts: a handler error (HandlerError with its message, INDEX_RANGE),
#   a malformed message (DecodeError, counted rejected).
mkdir -p "$OUT/errors-as-data"
timeout -k 5 55 node node_modules/vitest/vitest.mjs run test/persistence/bad-row.test.ts \
  > "$OUT/errors-as-data/bad-row.txt" 2>&1
echo "bad-row rc=$?"
timeout -k 5 60 node node_modules/vitest/vitest.mjs run packages/cuda-backend/test/backend.test.ts \
  -t 'handler error rejects|malformed message' > "$OUT/errors-as-data/backend.txt" 2>&1
echo "backend rc=$?"
grep -hE "Test Files|Tests |FAIL|✓|×|↓" "$OUT/errors-as-data/"*.txt | head -30
