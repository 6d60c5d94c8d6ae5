/*
 * The Cortex-M7 part of the cycle estimate (dual_issue.c): which registers and which of the
 * core's pipelines an instruction uses, and an in-order, two-wide issue of a block's
 * instructions. See dual_issue.c for the rules and where they come from.
 */
#ifndef KILN_DUAL_ISSUE_H
#define KILN_DUAL_ISSUE_H

#include <stdbool.h>
#include <stdint.h>

/* The registers an instruction reads or writes: bit n is Rn, FLAGS the APSR's flags (N, Z,
 * C, V and the SIMD GE bits together). */
#define M7_FLAGS (1u << 16)
#define M7_REGISTERS 17

/* What the model knows of one instruction. */
struct m7_insn {
    uint32_t reads;    /* every register it reads */
    uint32_t writes;   /* every register it writes */
    uint32_t acc;      /* those it reads as a multiply-accumulate's accumulator */
    uint8_t units;     /* M7_MAC, M7_LOAD, ... */
    bool single;       /* issues in one cycle and may pair; otherwise alone, at the M4's cost */
};

enum m7_unit {
    M7_MAC = 1,    /* the one multiply-accumulate pipeline */
    M7_LOAD = 2,   /* a single load */
    M7_STORE = 4,  /* a single store */
    M7_SHIFT = 8,  /* a shifted register, an extend, a bit field, a rotated immediate */
    M7_DSP = 16,   /* a DSP or SIMD instruction: only the first of a pair */
    M7_BRANCH = 32 /* may write PC: only the second of a pair */
};

/* An instruction from its halfwords (h2 unused for a 16-bit one). */
struct m7_insn m7_decode(unsigned h1, unsigned h2, bool wide);

/* The issue of one block, from its first instruction. */
struct m7_issue {
    uint32_t group;            /* the cycle the newest group issued in */
    uint32_t end;              /* the cycle the newest group's last instruction ends */
    bool open;                 /* the newest group holds one instruction that may pair */
    struct m7_insn first;      /* that instruction */
    uint32_t ready[M7_REGISTERS];     /* the cycle each register may be read in */
    uint32_t ready_acc[M7_REGISTERS]; /* ... read as an accumulator */
};

/* Issues `insn`, whose cost alone is `cycles`; returns the cycles it adds to the block. */
uint32_t m7_issue(struct m7_issue *state, const struct m7_insn *insn, unsigned cycles);

#endif
