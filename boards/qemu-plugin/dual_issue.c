/*
 * The Cortex-M7's dual issue, for the plugin's `core=m7` estimate (insn.c).
 *
 * ARM publishes no per-instruction timings for the Cortex-M7. What it publishes (Cortex-M7
 * TRM, DDI 0489, 1.1 and 1.2; the white paper "The DSP capabilities of ARM Cortex-M4 and
 * Cortex-M7 processors", 2016): a six-stage, in-order, superscalar pipeline that issues up to
 * two instructions a cycle, including load/load and load/store pairs; two ALU pipelines, one
 * multiply-accumulate pipeline, single-cycle multiply-accumulates and single loads. Which
 * pairs issue together, and the latencies, come from published measurements of the core
 * (instruction pairs timed on an STM32H7 from its caches); where those disagree or say
 * nothing, the rule below is the one that issues less. The model:
 *
 * - Instructions issue in order, in groups of one or two. An instruction joins the group before
 *   it when both are single-cycle instructions it decodes and:
 *   - it reads no register, and writes none but the flags, that the first writes (a
 *     conditional branch after the instruction that sets its flags pairs: it is predicted);
 *   - they do not both multiply (one MAC pipeline), both store, or both use the shifter (a
 *     shifted register operand, an extend, a bit field, saturation, an immediate beyond its
 *     low eight bits);
 *   - it is not a DSP or SIMD instruction (SXTB16, SMLAD, the parallel add/subtracts, REV...),
 *     which issue only first, and the first is not a branch, which issues only second;
 *   - its operands are ready in the group's cycle.
 * - Latencies: an ALU result may be read in the next cycle; a load's in the one after (a use
 *   in the very next cycle waits one); a multiply's likewise, except as the accumulator of the
 *   next multiply-accumulate, which it reaches in the next cycle.
 * - What it does not decode (LDM, STM, PUSH, POP, LDRD, STRD, divisions, IT, the FPU, system
 *   instructions) issues alone, after every register is ready, at the M4's cost.
 * - A block starts a new group: nothing pairs across a branch. A taken branch costs insn.c's
 *   refill P = 1, as on the M4: the predictor is not modelled, nor a misprediction.
 * Memory has no wait states (TCM), as for the other cores.
 */
#include "dual_issue.h"

#define R(n) (1u << (n))
#define ALL ((1u << M7_REGISTERS) - 1)

static struct m7_insn op(uint32_t reads, uint32_t writes, unsigned units)
{
    /* Reading PC is reading a constant. */
    return (struct m7_insn){.reads = reads & ~R(15), .writes = writes, .units = (uint8_t)units,
                            .single = true};
}

static struct m7_insn alone(void)
{
    return (struct m7_insn){.reads = ALL, .writes = ALL};
}

static struct m7_insn load_store(bool load, unsigned rt, uint32_t address, uint32_t writeback)
{
    if (load) {
        return op(address, R(rt) | writeback, M7_LOAD);
    }
    return op(R(rt) | address, writeback, M7_STORE);
}

/* 16-bit data processing (010000): Rdn = h[2:0], Rm = h[5:3]. */
static struct m7_insn narrow_data(unsigned h)
{
    unsigned rdn = h & 7, rm = (h >> 3) & 7;
    uint32_t reads = R(rdn) | R(rm), writes = R(rdn) | M7_FLAGS;
    switch ((h >> 6) & 0xf) {
    case 0x2: /* LSL, LSR, ASR, ROR by a register */
    case 0x3:
    case 0x4:
    case 0x7:
        return op(reads, writes, M7_SHIFT);
    case 0x5: /* ADC, SBC */
    case 0x6:
        return op(reads | M7_FLAGS, writes, 0);
    case 0x8: /* TST, CMP, CMN */
    case 0xa:
    case 0xb:
        return op(reads, M7_FLAGS, 0);
    case 0x9: /* RSB #0 */
    case 0xf: /* MVN */
        return op(R(rm), writes, 0);
    case 0xd:
        return op(reads, writes, M7_MAC); /* MULS */
    default:
        return op(reads, writes, 0);
    }
}

/* 16-bit ADD, CMP, MOV with high registers, BX, BLX (010001). */
static struct m7_insn narrow_special(unsigned h)
{
    unsigned rdn = (h & 7) | ((h >> 4) & 8), rm = (h >> 3) & 0xf;
    switch ((h >> 8) & 3) {
    case 0:
        return rdn == 15 ? alone() : op(R(rdn) | R(rm), R(rdn), 0);
    case 1:
        return op(R(rdn) | R(rm), M7_FLAGS, 0);
    case 2:
        return rdn == 15 ? alone() : op(R(rm), R(rdn), 0);
    default:
        return op(R(rm), (h & 0x80) ? R(14) : 0, M7_BRANCH);
    }
}

/* 16-bit miscellaneous (1011). */
static struct m7_insn narrow_misc(unsigned h)
{
    unsigned lo = h & 7, mid = (h >> 3) & 7;
    if ((h & 0xff00) == 0xb000) {
        return op(R(13), R(13), 0); /* ADD, SUB SP */
    }
    if ((h & 0x0500) == 0x0100) {
        return op(R(lo), 0, M7_BRANCH); /* CBZ, CBNZ */
    }
    if ((h & 0xff00) == 0xb200) {
        return op(R(mid), R(lo), M7_SHIFT); /* SXTH, SXTB, UXTH, UXTB */
    }
    if ((h & 0xff00) == 0xba00) {
        return op(R(mid), R(lo), M7_DSP); /* REV, REV16, REVSH */
    }
    return alone(); /* PUSH, POP, IT, hints, CPS, BKPT */
}

static struct m7_insn narrow(unsigned h)
{
    unsigned lo = h & 7, mid = (h >> 3) & 7, hi = (h >> 8) & 7;
    switch (h >> 11) {
    case 0x00: /* LSL, LSR, ASR by an immediate */
    case 0x01:
    case 0x02:
        return op(R(mid), R(lo) | M7_FLAGS, M7_SHIFT);
    case 0x03: /* ADD, SUB: a register or a 3-bit immediate */
        return op(R(mid) | ((h & 0x400) ? 0 : R((h >> 6) & 7)), R(lo) | M7_FLAGS, 0);
    case 0x04:
        return op(0, R(hi) | M7_FLAGS, 0); /* MOV immediate */
    case 0x05:
        return op(R(hi), M7_FLAGS, 0); /* CMP immediate */
    case 0x06:
    case 0x07:
        return op(R(hi), R(hi) | M7_FLAGS, 0); /* ADD, SUB immediate */
    case 0x08:
        return (h & 0x0400) ? narrow_special(h) : narrow_data(h);
    case 0x09:
        return op(0, R(hi), M7_LOAD); /* LDR literal */
    case 0x0a:
    case 0x0b:
        return load_store(((h >> 9) & 7) >= 3, lo, R(mid) | R((h >> 6) & 7), 0);
    case 0x0c:
    case 0x0d:
    case 0x0e:
    case 0x0f:
    case 0x10:
    case 0x11:
        return load_store((h >> 11) & 1, lo, R(mid), 0);
    case 0x12:
    case 0x13:
        return load_store((h >> 11) & 1, hi, R(13), 0);
    case 0x14:
        return op(0, R(hi), 0); /* ADR */
    case 0x15:
        return op(R(13), R(hi), 0); /* ADD Rd, SP */
    case 0x16:
    case 0x17:
        return narrow_misc(h);
    case 0x1a:
    case 0x1b:
        return ((h >> 8) & 0xf) >= 0xe ? alone() : op(M7_FLAGS, 0, M7_BRANCH); /* B<cond> */
    case 0x1c:
        return op(0, 0, M7_BRANCH); /* B */
    default:
        return alone(); /* LDM, STM */
    }
}

/* The reads and writes of a data-processing `opcode` (AND ... RSB) on Rd, Rn and operand2's
 * registers `operand`, with flags when `s`. */
static struct m7_insn data(unsigned opcode, unsigned rd, unsigned rn, uint32_t operand, bool s,
                           unsigned units)
{
    uint32_t reads = R(rn) | operand, writes = R(rd) | (s ? M7_FLAGS : 0);
    bool test = rd == 15 && s;
    switch (opcode) {
    case 0x0: /* AND, TST */
    case 0x4: /* EOR, TEQ */
    case 0x8: /* ADD, CMN */
    case 0xd: /* SUB, CMP */
        writes = test ? M7_FLAGS : writes;
        break;
    case 0x2: /* ORR, MOV */
    case 0x3: /* ORN, MVN */
        reads = rn == 15 ? operand : reads;
        break;
    case 0x6:
        units |= M7_DSP; /* PKHBT, PKHTB */
        break;
    case 0xa: /* ADC, SBC */
    case 0xb:
        reads |= M7_FLAGS;
        break;
    default:
        break;
    }
    return op(reads, writes, units);
}

/* 32-bit data processing, plain binary immediate. */
static struct m7_insn plain_immediate(unsigned h1, unsigned h2)
{
    unsigned rn = h1 & 0xf, rd = (h2 >> 8) & 0xf;
    switch ((h1 >> 4) & 0x1f) {
    case 0x00: /* ADDW, SUBW, ADR */
    case 0x0a:
        return op(R(rn), R(rd), 0);
    case 0x04:
        return op(0, R(rd), 0); /* MOVW */
    case 0x0c:
        return op(R(rd), R(rd), 0); /* MOVT */
    case 0x10: /* SSAT, USAT; SSAT16, USAT16 */
    case 0x12:
    case 0x18:
    case 0x1a:
        return op(R(rn), R(rd), M7_SHIFT | ((h1 & 0x20) && !(h2 & 0x70c0) ? M7_DSP : 0));
    case 0x14: /* SBFX, UBFX */
    case 0x1c:
        return op(R(rn), R(rd), M7_SHIFT);
    case 0x16:
        return op(R(rd) | R(rn), R(rd), M7_SHIFT); /* BFI, BFC */
    default:
        return alone();
    }
}

/* 32-bit data processing, register (1111 1010): shifts by a register, extends, SIMD, misc. */
static struct m7_insn register_data(unsigned h1, unsigned h2)
{
    unsigned a = (h1 >> 4) & 0xf, b = (h2 >> 4) & 0xf;
    unsigned rn = h1 & 0xf, rd = (h2 >> 8) & 0xf, rm = h2 & 0xf;
    if (!(a & 8) && b == 0) {
        return op(R(rn) | R(rm), R(rd) | ((a & 1) ? M7_FLAGS : 0), M7_SHIFT);
    }
    if (!(a & 8) && (b & 8)) {
        /* SXTAH ... UXTB; those of two halfwords (xXTAB16, xXTB16) are SIMD. */
        unsigned simd = (a & 6) == 2 ? M7_DSP : 0;
        return op(R(rm) | (rn == 15 ? 0 : R(rn)), R(rd), M7_SHIFT | simd);
    }
    if ((a & 8) && !(b & 8)) {
        return op(R(rn) | R(rm), R(rd) | M7_FLAGS, M7_DSP); /* parallel add, subtract */
    }
    if ((a & 0xc) == 8 && (b & 0xc) == 8) {
        /* QADD..., REV..., SEL (reads GE), CLZ */
        uint32_t ge = a == 0xa ? M7_FLAGS : 0;
        return op(R(rn) | R(rm) | ge, R(rd), a == 0xb ? 0 : M7_DSP);
    }
    return alone();
}

/* 32-bit multiply, multiply-accumulate, absolute difference (1111 1011 0). */
static struct m7_insn multiply(unsigned h1, unsigned h2)
{
    unsigned rn = h1 & 0xf, ra = h2 >> 12, rd = (h2 >> 8) & 0xf, rm = h2 & 0xf;
    uint32_t acc = ra == 15 ? 0 : R(ra);
    struct m7_insn i = op(R(rn) | R(rm) | acc, R(rd), M7_MAC | (((h1 >> 4) & 7) ? M7_DSP : 0));
    i.acc = acc;
    return i;
}

/* 32-bit long multiply, long multiply-accumulate, divide (1111 1011 1). */
static struct m7_insn long_multiply(unsigned h1, unsigned h2)
{
    unsigned a = (h1 >> 4) & 7, b = (h2 >> 4) & 0xf;
    unsigned rn = h1 & 0xf, lo = h2 >> 12, hi = (h2 >> 8) & 0xf, rm = h2 & 0xf;
    if (b == 0xf) {
        return alone(); /* SDIV, UDIV */
    }
    uint32_t acc = (a == 0 || a == 2) && b == 0 ? 0 : R(lo) | R(hi);
    struct m7_insn i = op(R(rn) | R(rm) | acc, R(lo) | R(hi), M7_MAC | (b ? M7_DSP : 0));
    i.acc = acc;
    return i;
}

/* 32-bit single loads and stores (1111 100x). */
static struct m7_insn single(unsigned h1, unsigned h2)
{
    unsigned rn = h1 & 0xf, rt = h2 >> 12;
    bool load = (h1 >> 4) & 1;
    if (rn == 15 || (h1 & 0x80)) {
        return load_store(load, rt, R(rn), 0); /* literal, 12-bit immediate */
    }
    if ((h2 & 0x0fc0) == 0) {
        return load_store(load, rt, R(rn) | R(h2 & 0xf), 0); /* register offset */
    }
    /* 8-bit immediate: writes Rn back when indexed with W. */
    uint32_t writeback = (h2 & 0x0900) == 0x0900 ? R(rn) : 0;
    return load_store(load, rt, R(rn), writeback);
}

static struct m7_insn wide(unsigned h1, unsigned h2)
{
    unsigned op1 = (h1 >> 11) & 3;
    unsigned rn = h1 & 0xf, rd = (h2 >> 8) & 0xf;
    bool s = (h1 >> 4) & 1;
    if (op1 == 1) {
        if ((h1 & 0x0600) != 0x0200) {
            return alone(); /* LDM, STM, LDRD, STRD, exclusives, TBB, coprocessor */
        }
        unsigned amount = ((h2 >> 10) & 0x1c) | ((h2 >> 6) & 3);
        bool shifted = amount != 0 || ((h2 >> 4) & 3) == 3;
        return data((h1 >> 5) & 0xf, rd, rn, R(h2 & 0xf), s, shifted ? M7_SHIFT : 0);
    }
    if (op1 == 2 && !(h2 & 0x8000)) {
        if (h1 & 0x0200) {
            return plain_immediate(h1, h2);
        }
        bool rotated = (h1 & 0x0400) || (h2 & 0x7000);
        return data((h1 >> 5) & 0xf, rd, rn, 0, s, rotated ? M7_SHIFT : 0);
    }
    if (op1 == 2) {
        unsigned o = (h2 >> 12) & 5;
        if (o == 0) {
            return (h1 & 0x0380) != 0x0380 ? op(M7_FLAGS, 0, M7_BRANCH) : alone();
        }
        return op(0, o == 1 ? 0 : R(14), M7_BRANCH); /* B.W, BL */
    }
    if ((h1 & 0x0e00) == 0x0800) {
        return single(h1, h2);
    }
    if ((h1 & 0x0f00) == 0x0a00) {
        return register_data(h1, h2);
    }
    if ((h1 & 0x0f80) == 0x0b00) {
        return multiply(h1, h2);
    }
    if ((h1 & 0x0f80) == 0x0b80) {
        return long_multiply(h1, h2);
    }
    return alone();
}

struct m7_insn m7_decode(unsigned h1, unsigned h2, bool is_wide)
{
    return is_wide ? wide(h1, h2) : narrow(h1);
}

/* The cycle `i` may issue in: when every register it reads is ready. */
static uint32_t operands_ready(const struct m7_issue *s, const struct m7_insn *i)
{
    uint32_t at = 0;
    for (unsigned r = 0; r < M7_REGISTERS; r++) {
        if (!(i->reads & R(r))) {
            continue;
        }
        uint32_t ready = (i->acc & R(r)) ? s->ready_acc[r] : s->ready[r];
        /* A predicted branch does not wait for its flags. */
        if (r == 16 && (i->units & M7_BRANCH)) {
            ready = 0;
        }
        at = ready > at ? ready : at;
    }
    return at;
}

static bool pairs(const struct m7_insn *a, const struct m7_insn *b)
{
    /* Both may set the flags: the second's stand. */
    uint32_t depends = (b->reads & a->writes) | (b->writes & a->writes & ~M7_FLAGS);
    if (b->units & M7_BRANCH) {
        depends &= ~M7_FLAGS;
    }
    unsigned both = a->units & b->units;
    return a->single && b->single && !depends && !(both & (M7_MAC | M7_STORE | M7_SHIFT)) &&
           !(b->units & M7_DSP) && !(a->units & M7_BRANCH);
}

uint32_t m7_issue(struct m7_issue *s, const struct m7_insn *i, unsigned cycles)
{
    uint32_t before = s->end;
    uint32_t ready = operands_ready(s, i);
    uint32_t at;
    if (s->open && ready <= s->group && pairs(&s->first, i)) {
        at = s->group;
        s->open = false;
    } else {
        at = s->end > ready ? s->end : ready;
        s->group = at;
        s->open = i->single;
        s->first = *i;
    }
    uint32_t length = i->single ? 1 : cycles;
    s->end = at + length > s->end ? at + length : s->end;
    uint32_t latency = (i->units & (M7_LOAD | M7_MAC)) ? 2 : length;
    for (unsigned r = 0; r < M7_REGISTERS; r++) {
        if (i->writes & R(r)) {
            s->ready[r] = at + latency;
            s->ready_acc[r] = at + ((i->units & M7_MAC) ? 1 : latency);
        }
    }
    return s->end - before;
}
