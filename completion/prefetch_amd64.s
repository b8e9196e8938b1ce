#include "textflag.h"

// func prefetch4(a, b, c, d *float64)
TEXT ·prefetch4(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	PREFETCHT0 (AX)
	MOVQ b+8(FP), AX
	PREFETCHT0 (AX)
	MOVQ c+16(FP), AX
	PREFETCHT0 (AX)
	MOVQ d+24(FP), AX
	PREFETCHT0 (AX)
	RET
