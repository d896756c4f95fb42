# embed.cmake — turns the kernel bitcode into a C array the compiler links in.
# Usage: cmake -DIN=kernels.bc -DOUT=kernels_bc.c -P embed.cmake
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE ${OUT} "/* generated from the kernel bitcode by cmake/embed.cmake */\n#include <stddef.h>\n"
  "const unsigned char mg_kernels_bc[] __attribute__((aligned(16))) = {\n${body}\n};\n"
  "const size_t mg_kernels_bc_len = ${bytes};\n")
