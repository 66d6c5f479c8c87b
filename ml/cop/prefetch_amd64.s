#include "textflag.h"

// func prefetchWriters(state []TxnID, set []uint32)
TEXT ·prefetchWriters(SB), NOSPLIT, $0-48
	MOVQ state_base+0(FP), AX
	MOVQ state_len+8(FP), BX
	MOVQ set_base+24(FP), SI
	MOVQ set_len+32(FP), CX
	TESTQ CX, CX
	JEQ done
loop:
	MOVL (SI), DX
	CMPQ DX, BX
	JAE next
	PREFETCHT0 (AX)(DX*4)
next:
	ADDQ $4, SI
	DECQ CX
	JNE loop
done:
	RET
