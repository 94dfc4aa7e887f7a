/* Ringgrain CUDA runtime: the msgpack writer the generated encoders call (what the host encoder writes, byte for byte). */
/* ---- msgpack writer: what the host encoder writes, byte for byte. p == 0 only measures. ------- */
struct rg_wr { unsigned char* p; unsigned int pos; unsigned int cap; rg_coop* co; };
RG_HD static inline bool rg_need(rg_wr* w, unsigned int n, unsigned int* at) {
  if (n > w->cap - w->pos) return false;
  *at = w->pos;
  w->pos += n;
  return true;
}
RG_HD static inline void rg_put(rg_wr* w, unsigned int at, unsigned int v) { if (w->p) w->p[at] = (unsigned char)v; }
RG_HD static inline void rg_put_be16(rg_wr* w, unsigned int at, unsigned int v) { rg_put(w, at, v >> 8); rg_put(w, at + 1, v); }
RG_HD static inline void rg_put_be32(rg_wr* w, unsigned int at, unsigned int v) { rg_put(w, at, v >> 24); rg_put(w, at + 1, v >> 16); rg_put(w, at + 2, v >> 8); rg_put(w, at + 3, v); }
RG_HD static inline void rg_put_le16(rg_wr* w, unsigned int at, unsigned int v) { rg_put(w, at, v); rg_put(w, at + 1, v >> 8); }
RG_HD static inline void rg_put_le32(rg_wr* w, unsigned int at, unsigned int v) { rg_put(w, at, v); rg_put(w, at + 1, v >> 8); rg_put(w, at + 2, v >> 16); rg_put(w, at + 3, v >> 24); }
RG_HD static bool rg_wr_byte(rg_wr* w, unsigned int b) { unsigned int at; if (!rg_need(w, 1, &at)) return false; rg_put(w, at, b); return true; }
RG_HD static bool rg_wr_int(rg_wr* w, long long v) {
  unsigned int at;
  if (v >= 0) {
    if (v < 0x80) return rg_wr_byte(w, (unsigned int)v);
    if (v < 0x100) { if (!rg_need(w, 2, &at)) return false; rg_put(w, at, 0xcc); rg_put(w, at + 1, (unsigned int)v); return true; }
    if (v < 0x10000) { if (!rg_need(w, 3, &at)) return false; rg_put(w, at, 0xcd); rg_put_be16(w, at + 1, (unsigned int)v); return true; }
    if (!rg_need(w, 5, &at)) return false;
    rg_put(w, at, 0xce); rg_put_be32(w, at + 1, (unsigned int)v); return true;
  }
  if (v >= -32) return rg_wr_byte(w, (unsigned int)(v & 0xff));
  if (v >= -128) { if (!rg_need(w, 2, &at)) return false; rg_put(w, at, 0xd0); rg_put(w, at + 1, (unsigned int)(v & 0xff)); return true; }
  if (v >= -32768) { if (!rg_need(w, 3, &at)) return false; rg_put(w, at, 0xd1); rg_put_be16(w, at + 1, (unsigned int)(v & 0xffff)); return true; }
  if (!rg_need(w, 5, &at)) return false;
  rg_put(w, at, 0xd2); rg_put_be32(w, at + 1, (unsigned int)v); return true;
}
RG_HD static bool rg_wr_float32(rg_wr* w, float v) { unsigned int at; if (!rg_need(w, 5, &at)) return false; rg_put(w, at, 0xca); rg_put_be32(w, at + 1, rg_f2u(v)); return true; }
RG_HD static bool rg_wr_float64(rg_wr* w, double v) {
  unsigned int at;
  if (!rg_need(w, 9, &at)) return false;
  unsigned long long u = rg_d2u(v);
  rg_put(w, at, 0xcb); rg_put_be32(w, at + 1, (unsigned int)(u >> 32)); rg_put_be32(w, at + 5, (unsigned int)u);
  return true;
}
RG_HD static bool rg_wr_maphdr(rg_wr* w, unsigned int n) {
  unsigned int at;
  if (n < 16) return rg_wr_byte(w, 0x80 | n);
  if (!rg_need(w, 3, &at)) return false;
  rg_put(w, at, 0xde); rg_put_be16(w, at + 1, n); return true;
}
RG_HD static bool rg_wr_arrhdr(rg_wr* w, unsigned int n) {
  unsigned int at;
  if (n < 16) return rg_wr_byte(w, 0x90 | n);
  if (n < 0x10000) { if (!rg_need(w, 3, &at)) return false; rg_put(w, at, 0xdc); rg_put_be16(w, at + 1, n); return true; }
  if (!rg_need(w, 5, &at)) return false;
  rg_put(w, at, 0xdd); rg_put_be32(w, at + 1, n); return true;
}
RG_HD static bool rg_wr_binhdr(rg_wr* w, unsigned int n) {
  unsigned int at;
  if (n < 0x100) { if (!rg_need(w, 2, &at)) return false; rg_put(w, at, 0xc4); rg_put(w, at + 1, n); return true; }
  if (n < 0x10000) { if (!rg_need(w, 3, &at)) return false; rg_put(w, at, 0xc5); rg_put_be16(w, at + 1, n); return true; }
  if (!rg_need(w, 5, &at)) return false;
  rg_put(w, at, 0xc6); rg_put_be32(w, at + 1, n); return true;
}
/* A str (fixstr / str8 / str16 / str32), used for map keys and error texts. */
RG_HD static bool rg_wr_str(rg_wr* w, const char* s, unsigned int n) {
  unsigned int at;
  if (n < 32) { if (!rg_wr_byte(w, 0xa0 | n)) return false; }
  else if (n < 0x100) { if (!rg_need(w, 2, &at)) return false; rg_put(w, at, 0xd9); rg_put(w, at + 1, n); }
  else if (n < 0x10000) { if (!rg_need(w, 3, &at)) return false; rg_put(w, at, 0xda); rg_put_be16(w, at + 1, n); }
  else { if (!rg_need(w, 5, &at)) return false; rg_put(w, at, 0xdb); rg_put_be32(w, at + 1, n); }
  if (!rg_need(w, n, &at)) return false;
  for (unsigned int i = 0; i < n; i++) rg_put(w, at + i, (unsigned char)s[i]);
  return true;
}
RG_HD static inline unsigned int rg_strlen(const char* s) { unsigned int n = 0; while (s[n]) n++; return n; }
/* A failed or refused turn's reply payload as data (core turn-error.ts): [code, [text]], the host builds the error. */
RG_HD static bool rg_wr_turn_error(rg_wr* w, unsigned int code, const char* s, unsigned int n) {
  return rg_wr_arrhdr(w, 2u) && rg_wr_int(w, (long long)code) && rg_wr_arrhdr(w, 1u) && rg_wr_str(w, s, n);
}
/* Per scalar kind (codegen kind-codecs.ts): rg_wr_<kind>, and rg_wr_a<kind> for numeric arrays. */
