#include "textflag.h"

// func request(args *[6]uintptr) uintptr
//
// Valgrind's client request on amd64 (valgrind.h, VALGRIND_DO_CLIENT_REQUEST_EXPR): the four
// rotations of DI by 3, 13, 61 and 51 bits (128 in all, so DI is unchanged) are the preamble
// valgrind looks for, XCHGQ BX, BX is the request, AX points at the arguments and DX carries the
// result (0, the default, when not running under valgrind).
TEXT ·request(SB), NOSPLIT, $0-16
	MOVQ args+0(FP), AX
	XORQ DX, DX
	ROLQ $3, DI
	ROLQ $13, DI
	ROLQ $61, DI
	ROLQ $51, DI
	XCHGQ BX, BX
	MOVQ DX, ret+8(FP)
	RET
