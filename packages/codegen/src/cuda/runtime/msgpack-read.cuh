/* Ringgrain CUDA runtime: zeroing, and the byte-wise msgpack reader the generated decoders call. */
/* Word-wise where aligned: a byte loop over a local struct is one local-memory store per byte. */
RG_HD static inline void rg_zero(void* p, unsigned int n) {
  unsigned char* b = (unsigned char*)p;
  unsigned int i = 0;
  if (((unsigned long long)b & 7u) == 0u) for (; i + 8u <= n; i += 8u) *(unsigned long long*)(b + i) = 0ull;
  for (; i < n; i++) b[i] = 0;
}
RG_HD static inline void rg_copy(void* d, const void* s, unsigned int n) {
  unsigned char* a = (unsigned char*)d;
  const unsigned char* b = (const unsigned char*)s;
  unsigned int i = 0;
  if ((((unsigned long long)a | (unsigned long long)b) & 7u) == 0u) for (; i + 8u <= n; i += 8u) *(unsigned long long*)(a + i) = *(const unsigned long long*)(b + i);
  for (; i < n; i++) a[i] = b[i];
}
/* A struct/array/vec copy inside a turn: with the warp's help when the turn is alone on its warp. */
RG_HD static inline void rg_copy_t(rg_turn* t, void* d, const void* s, unsigned int n) {
  if (!rg_bulk(t->co, (unsigned char*)d, (const unsigned char*)s, n)) rg_copy(d, s, n);
}
RG_HD static inline unsigned int rg_minu(unsigned int a, unsigned int b) { return a < b ? a : b; }

/* ---- msgpack reader: byte-wise, bounds-checked against the slot's length --------------------- */
struct rg_rd { const unsigned char* p; unsigned int pos; unsigned int end; rg_coop* co; };
RG_HD static inline bool rg_take(rg_rd* r, unsigned int n, unsigned int* at) {
  if (n > r->end - r->pos) return false;
  *at = r->pos;
  r->pos += n;
  return true;
}
RG_HD static inline unsigned int rg_be16(const unsigned char* p) { return ((unsigned int)p[0] << 8) | p[1]; }
RG_HD static inline unsigned int rg_le16(const unsigned char* p) { return ((unsigned int)p[1] << 8) | p[0]; }
RG_HD static inline unsigned int rg_be32(const unsigned char* p) { return ((unsigned int)p[0] << 24) | ((unsigned int)p[1] << 16) | ((unsigned int)p[2] << 8) | p[3]; }
RG_HD static inline unsigned long long rg_be64(const unsigned char* p) { return ((unsigned long long)rg_be32(p) << 32) | rg_be32(p + 4); }
RG_HD static inline unsigned int rg_le32(const unsigned char* p) { return ((unsigned int)p[3] << 24) | ((unsigned int)p[2] << 16) | ((unsigned int)p[1] << 8) | p[0]; }
RG_HD static inline unsigned long long rg_le64(const unsigned char* p) { return ((unsigned long long)rg_le32(p + 4) << 32) | rg_le32(p); }
/* Any msgpack number (every int width, float32, float64) as the JS decoder reads it. */
RG_HD static bool rg_rd_num(rg_rd* r, double* out) {
  unsigned int at;
  if (!rg_take(r, 1, &at)) return false;
  unsigned int t = r->p[at];
  if (t < 0x80) { *out = (double)t; return true; }
  if (t >= 0xe0) { *out = (double)((int)t - 256); return true; }
  switch (t) {
    case 0xca: if (!rg_take(r, 4, &at)) return false; *out = (double)rg_u2f(rg_be32(r->p + at)); return true;
    case 0xcb: if (!rg_take(r, 8, &at)) return false; *out = rg_u2d(rg_be64(r->p + at)); return true;
    case 0xcc: if (!rg_take(r, 1, &at)) return false; *out = (double)r->p[at]; return true;
    case 0xcd: if (!rg_take(r, 2, &at)) return false; *out = (double)rg_be16(r->p + at); return true;
    case 0xce: if (!rg_take(r, 4, &at)) return false; *out = (double)rg_be32(r->p + at); return true;
    case 0xcf: if (!rg_take(r, 8, &at)) return false; *out = (double)rg_be64(r->p + at); return true;
    case 0xd0: if (!rg_take(r, 1, &at)) return false; *out = (double)(signed char)r->p[at]; return true;
    case 0xd1: if (!rg_take(r, 2, &at)) return false; *out = (double)(short)rg_be16(r->p + at); return true;
    case 0xd2: if (!rg_take(r, 4, &at)) return false; *out = (double)(int)rg_be32(r->p + at); return true;
    case 0xd3: if (!rg_take(r, 8, &at)) return false; *out = (double)(long long)rg_be64(r->p + at); return true;
    default: return false;
  }
}
RG_HD static bool rg_rd_arrhdr(rg_rd* r, unsigned int* n) {
  unsigned int at;
  if (!rg_take(r, 1, &at)) return false;
  unsigned int t = r->p[at];
  if ((t & 0xf0) == 0x90) { *n = t & 0x0f; return true; }
  if (t == 0xdc) { if (!rg_take(r, 2, &at)) return false; *n = rg_be16(r->p + at); return true; }
  if (t == 0xdd) { if (!rg_take(r, 4, &at)) return false; *n = rg_be32(r->p + at); return true; }
  return false;
}
RG_HD static bool rg_rd_maphdr(rg_rd* r, unsigned int* n) {
  unsigned int at;
  if (!rg_take(r, 1, &at)) return false;
  unsigned int t = r->p[at];
  if ((t & 0xf0) == 0x80) { *n = t & 0x0f; return true; }
  if (t == 0xde) { if (!rg_take(r, 2, &at)) return false; *n = rg_be16(r->p + at); return true; }
  if (t == 0xdf) { if (!rg_take(r, 4, &at)) return false; *n = rg_be32(r->p + at); return true; }
  return false;
}
/* Map keys: fixstr or str8, as the host decoder accepts. */
RG_HD static bool rg_rd_key(rg_rd* r, unsigned int* at, unsigned int* len) {
  unsigned int p;
  if (!rg_take(r, 1, &p)) return false;
  unsigned int t = r->p[p];
  if ((t & 0xe0) == 0xa0) *len = t & 0x1f;
  else if (t == 0xd9) { if (!rg_take(r, 1, &p)) return false; *len = r->p[p]; }
  else return false;
  return rg_take(r, *len, at);
}
RG_HD static inline bool rg_keyeq(const rg_rd* r, unsigned int at, unsigned int len, const char* k, unsigned int klen) {
  if (len != klen) return false;
  for (unsigned int i = 0; i < len; i++) if (r->p[at + i] != (unsigned char)k[i]) return false;
  return true;
}
RG_HD static bool rg_rd_binhdr(rg_rd* r, unsigned int* len) {
  unsigned int at, t = r->p[r->pos];
  r->pos++;
  if (t == 0xc4) { if (!rg_take(r, 1, &at)) return false; *len = r->p[at]; return true; }
  if (t == 0xc5) { if (!rg_take(r, 2, &at)) return false; *len = rg_be16(r->p + at); return true; }
  if (!rg_take(r, 4, &at)) return false;
  *len = rg_be32(r->p + at);
  return true;
}
/* Numeric arrays: bin (little-endian elements) or a msgpack array of numbers; min..max elements. */
#define RG_RD_NUMARR(NAME, T, BYTES, ELEM, FROMLE)                                                  \
  RG_HD static bool NAME(rg_rd* r, T* out, unsigned int min, unsigned int max, unsigned int* count) { \
    if (r->pos >= r->end) return false;                                                             \
    unsigned int t = r->p[r->pos], n, at;                                                           \
    if (t == 0xc4 || t == 0xc5 || t == 0xc6) {                                                      \
      unsigned int len;                                                                             \
      if (!rg_rd_binhdr(r, &len) || len % BYTES != 0) return false;                                 \
      n = len / BYTES;                                                                              \
      if (n < min || n > max || !rg_take(r, len, &at)) return false;                                \
      if (!rg_bulk(r->co, (unsigned char*)out, r->p + at, len)) /* the device is little-endian */   \
        for (unsigned int i = 0; i < n; i++) out[i] = FROMLE(r->p + at + i * BYTES);                \
    } else {                                                                                        \
      if (!rg_rd_arrhdr(r, &n) || n < min || n > max) return false;                                 \
      for (unsigned int i = 0; i < n; i++) if (!ELEM(r, &out[i])) return false;                     \
    }                                                                                               \
    *count = n;                                                                                     \
    return true;                                                                                    \
  }
/* Per scalar kind (codegen kind-codecs.ts): rg_rd_<kind>, and rg_rd_a<kind> for numeric arrays. */
