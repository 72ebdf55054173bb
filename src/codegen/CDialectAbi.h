/* The calling convention of the c dialect's entry points, shared by the code generator
 * (which prints it into every translation unit) and the cpu plugin (which calls it).
 *
 * Each LoopFunc becomes one exported function
 *
 *   void ut_entry_NAME(const ut_c_arg* args, uint32_t bx, uint32_t by, uint32_t bz);
 *
 * run once per grid block (bx, by, bz). `args` holds the program's buffers in
 * declaration order (data pointers in .p), then its runtime params widened: integer
 * and bool params in .i, floating-point params in .f. The generated code narrows them.
 *
 * The declarations are written once, inside a macro, so the generator can paste the
 * very same text into the sources it prints (which are compiled without this header).
 */
#ifndef UNITILE_CODEGEN_C_DIALECT_ABI_H
#define UNITILE_CODEGEN_C_DIALECT_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UT_C_DIALECT_ABI_DECLS                                                                     \
  typedef union ut_c_arg {                                                                         \
    void* p;                                                                                       \
    int64_t i;                                                                                     \
    double f;                                                                                      \
  } ut_c_arg;                                                                                      \
  typedef void (*ut_c_entry_fn)(const ut_c_arg* args, uint32_t bx, uint32_t by, uint32_t bz);

UT_C_DIALECT_ABI_DECLS

/* Entry point of LoopFunc NAME: UT_C_ENTRY_PREFIX "NAME". */
#define UT_C_ENTRY_PREFIX "ut_entry_"

#define UT_C_ABI_STRINGIFY_(...) #__VA_ARGS__
#define UT_C_ABI_STRINGIFY(...) UT_C_ABI_STRINGIFY_(__VA_ARGS__)
/* The declarations above as one line of C text. */
#define UT_C_DIALECT_ABI_TEXT UT_C_ABI_STRINGIFY(UT_C_DIALECT_ABI_DECLS)

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* UNITILE_CODEGEN_C_DIALECT_ABI_H */
