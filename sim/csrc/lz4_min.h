/* The two LZ4 functions Verilator's FST writer uses (lz4.h API, stable since
 * LZ4 r129). Used instead of <lz4.h> when the lz4 development headers are
 * not installed; the library itself is liblz4.so.1 or lz4_literals.c. */
#ifndef LVSNIC_LZ4_MIN_H
#define LVSNIC_LZ4_MIN_H
#ifdef __cplusplus
extern "C" {
#endif
int LZ4_compressBound(int inputSize);
int LZ4_compress_default(const char* src, char* dst, int srcSize, int dstCapacity);
#ifdef __cplusplus
}
#endif
#endif
