/* Fallback for machines without liblz4 (build.rs compiles this only then).
 * Verilator's FST writer needs two LZ4 functions; this provides them with a
 * valid LZ4 block encoding that stores every byte as a literal: any LZ4
 * decoder (GTKWave, Surfer, fst readers) reads it, the file is just larger. */
#include <string.h>

#include "lz4_min.h"

int LZ4_compressBound(int isize) {
    if (isize < 0 || isize > 0x7E000000) return 0;
    return isize + isize / 255 + 16;
}

int LZ4_compress_default(const char* src, char* dst, int srcSize, int dstCapacity) {
    int need = LZ4_compressBound(srcSize);
    int n = srcSize;
    char* o = dst;
    if (srcSize < 0 || need == 0 || dstCapacity < need) return 0;
    /* one sequence: token (literal length, no match), length bytes, literals */
    if (n >= 15) {
        *o++ = (char)0xF0;
        n -= 15;
        while (n >= 255) {
            *o++ = (char)0xFF;
            n -= 255;
        }
        *o++ = (char)n;
    } else {
        *o++ = (char)(n << 4);
    }
    memcpy(o, src, (size_t)srcSize);
    o += srcSize;
    return (int)(o - dst);
}
