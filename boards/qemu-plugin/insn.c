/*
 * Instruction counter (and cycle estimate) for Kiln's emulated boards, as a QEMU TCG plugin.
 *
 * Counts every instruction the guest executes and, whenever the guest stores to the marker
 * address (plugin argument `marker=0x...`), prints the running count as `kiln-insn <count>`.
 * The firmware stores to its marker before and after each kernel, so the difference between
 * two consecutive lines is the cost of one kernel. The count is exact and identical run to run.
 *
 *   qemu-system-arm ... -plugin libinsn.so,marker=0x20000000[,core=m4] -d plugin -D insn.log
 *
 * With `core=m0|m3|m4|m33|m7|m55` it also estimates the cycles the core would take, and prints
 * them after the count: `kiln-insn <instructions> <cycles>`, and `kiln-insn-total <instructions>
 * <cycles>` at exit. Without it the lines are as before, one number each.
 *
 * The estimate: each Thumb/Thumb-2 instruction is classified from its bytes when QEMU
 * translates it and costs what the core's Technical Reference Manual gives it; a taken branch
 * adds its pipeline refill, found at run time by comparing where each translation block starts
 * with where the last instruction of the block before it falls through to. It is an estimate of
 * the core alone: memory with no wait states, no bus contention, no caches, no interrupts;
 * conditional instructions in an IT block cost the same whether or not their condition passes;
 * a load or store whose address needs the result of the instruction just before it is not
 * stalled; divisions cost their worst case. The timings (cycles; P is the pipeline refill of a
 * taken branch, N the registers transferred):
 *
 * Cortex-M4 (TRM r0p1, DDI 0439, table 3-1 "Cortex-M4 instruction set summary", section 3.3.2
 * "Load/store timings", table 7-1 "FPU instruction set"), P = 1 (the TRM gives 1 to 3 by the
 * target's alignment and width; 1 is what a `subs; bne` loop measures from zero-wait memory):
 *   data processing, shifts, extends, bit fields, REV, CLZ, MOVW/MOVT, saturation, parallel
 *   add/subtract, SEL, IT, NOP, hints, MRS/MSR, barriers .......................... 1
 *   MUL, MULS ..................................................................... 1
 *   MLA, MLS ...................................................................... 2
 *   SMULL, UMULL, SMLAL, UMLAL, UMAAL, SMLALxy, SMLALD, SMLSLD ........................ 1
 *   SMULxy, SMLAxy, SMULWy, SMLAWy, SMUAD, SMLAD, SMUSD, SMLSD, SMMUL, SMMLA, SMMLS,
 *   USAD8, USADA8 ................................................................. 1
 *   SDIV, UDIV (2 to 12 by the operands, early termination): the worst case ........ 12
 *   LDR, LDRB, LDRH, LDRSB, LDRSH, STR, STRB, STRH, LDREX, STREX (any addressing) ... 2,
 *     or 1 when the instruction executed just before it was one of these too (table 3-1
 *     note: "neighboring load and store single instructions can pipeline their address and
 *     data phases"), except after a STR with a register offset ("other instructions cannot
 *     be pipelined after STR with register offset") and when this one's base or offset
 *     register is the register the load before it loaded (3.3.2: pipelined "if ... the
 *     destination of the first LDR is not used to compute the address for the next
 *     instruction")
 *   LDRD, STRD (never pipelined, 3.3.2) ........................................... 3
 *   LDM, STM, PUSH, POP ........................................................... 1+N
 *   B, B<cond>, CBZ, CBNZ, BL, BX, BLX, a data-processing instruction that writes PC ... 1,
 *     and 1+P when taken
 *   POP/LDM with PC ............................................................... 1+N+P
 *   LDR PC, TBB, TBH .............................................................. 2+P
 *   VADD, VSUB, VMUL, VNMUL, VABS, VNEG, VCMP(E), VCVT*, VMOV (immediate, register, one
 *   core register), VMRS, VMSR, FPv5 VSEL/VMAXNM/VMINNM/VRINT ........................ 1
 *   VMOV between two core registers and two singles or one double ..................... 2
 *   VMLA, VMLS, VNMLA, VNMLS, VFMA, VFMS, VFNMA, VFNMS ................................. 3
 *   VDIV, VSQRT ................................................................... 14
 *   VLDR, VSTR (single precision; never pipelined here) ............................ 2
 *   VLDR, VSTR (double) ........................................................... 3
 *   VLDM, VSTM, VPUSH, VPOP (N words) ............................................. 1+N
 * Cortex-M33: ARM publishes no per-instruction table for it; its 3-stage ARMv8-M Mainline
 *   pipeline is the M4's, so the M4's figures are used unchanged.
 * Cortex-M55: ARM publishes no per-instruction table for its scalar pipeline either: the M4's
 *   figures. Its Helium (MVE) instructions execute as four beats of 32 bits each, two beats a
 *   cycle (the M55 implements Helium "dual-beat": Cortex-M55 Technical Reference Manual,
 *   101051): 2 cycles each, and 1 when it follows a Helium instruction of the other kind (a
 *   vector load or store after an arithmetic one, or the other way round), whose second cycle
 *   its first two beats overlap (the beat-wise execution of the Armv8.1-M architecture, Armv8-M
 *   Architecture Reference Manual, DDI 0553). A scalar instruction between them ends the
 *   overlap; the latency of a vector result the next instruction reads (a VMLADAVA's
 *   accumulator register) is not counted.
 * Cortex-M7: dual issue (dual_issue.c, which gives its rules and sources): single-cycle
 *   instructions, single loads and stores and multiply-accumulates included, issue in order
 *   up to two a cycle, with the latencies of loads and multiplies; what it does not decode
 *   issues alone at the M4's figure. P = 1; the branch predictor is left out.
 * Cortex-M3 (TRM r2p0, DDI 0337, table 18-1): the M4's integer figures but SMULL, UMULL 3 to 5
 *   (the worst case, 5 here) and SMLAL, UMLAL 4 to 7 (7 here); no DSP or FPU instructions.
 * Cortex-M0 (TRM r0p0, DDI 0432, table 3-1): every load and store 2 (no pipelining), MULS 1
 *   (the fast multiplier), LDM/STM/PUSH/POP 1+N, B and B<cond> taken 3 (not taken 1), BL 4,
 *   BX, BLX, and MOV/ADD to PC 3, POP with PC 4+N (N not counting PC), MRS, MSR, DMB, DSB,
 *   ISB 4: that is P = 2.
 *
 * Debian ships no qemu-plugin.h, so the few declarations of the plugin API (version 1, QEMU 7.2)
 * this file uses are written out below.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dual_issue.h"

typedef uint64_t qemu_plugin_id_t;
typedef uint32_t qemu_plugin_meminfo_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
struct qemu_info_t;

enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W = 2 };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };

typedef void (*tb_trans_cb)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*mem_cb)(unsigned int, qemu_plugin_meminfo_t, uint64_t, void *);
typedef void (*udata_cb)(unsigned int, void *);
typedef void (*atexit_cb)(qemu_plugin_id_t, void *);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, tb_trans_cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *, udata_cb,
                                          enum qemu_plugin_cb_flags, void *);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *, enum qemu_plugin_op,
                                                void *, uint64_t);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *, mem_cb,
                                      enum qemu_plugin_cb_flags, enum qemu_plugin_mem_rw, void *);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, atexit_cb, void *);
void qemu_plugin_outs(const char *);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static uint64_t executed;
static uint64_t marker;

/* ---- the cycle model ------------------------------------------------------------------- */

enum core { CORE_NONE, CORE_M0, CORE_M3, CORE_M4, CORE_M33, CORE_M7, CORE_M55 };
static enum core core = CORE_NONE;
static uint64_t cycles;

/* What the model knows of one instruction. */
struct cost {
    unsigned cycles;      /* when not taken and not pipelined */
    unsigned taken;       /* added when it branches (the next block is not its fallthrough) */
    bool branch;          /* may write PC */
    bool ldst;            /* a single load or store: may pipeline after the one before */
    bool pipes_next;      /* a load or store the next single load or store pipelines after */
    uint16_t address;     /* the registers its address is computed from (bit n: Rn) */
    uint16_t loaded;      /* the register it loads (a single load), or 0 */
};

/* The core's published figures that differ between cores. */
struct timings {
    unsigned refill;      /* P */
    unsigned mla;         /* MLA, MLS */
    unsigned long_mul;    /* SMULL, UMULL */
    unsigned long_mac;    /* SMLAL, UMLAL, UMAAL, ... */
    unsigned div;         /* SDIV, UDIV */
    unsigned system;      /* MRS, MSR, DMB, DSB, ISB */
    unsigned bl_extra;    /* BL beyond 1+P */
    bool pipelining;      /* neighbouring single loads and stores pipeline */
};

static struct timings t;

static const struct timings M4 = {1, 2, 1, 1, 12, 1, 0, true};
static const struct timings M3 = {1, 2, 5, 7, 12, 1, 0, true};
static const struct timings M0 = {2, 2, 1, 1, 12, 4, 1, false};

static struct cost alu(unsigned n)
{
    return (struct cost){.cycles = n};
}

static struct cost jump(unsigned base)
{
    return (struct cost){.cycles = base, .taken = t.refill, .branch = true};
}

/* A single load or store: `rn`, `rm` (16: none) its address registers, `rt` what it loads. */
static struct cost single(bool load, unsigned rt, unsigned rn, unsigned rm)
{
    struct cost c = {.cycles = 2, .ldst = t.pipelining};
    if (rn < 15) {
        c.address |= (uint16_t)(1u << rn);
    }
    if (rm < 15) {
        c.address |= (uint16_t)(1u << rm);
    }
    if (load && rt == 15) {
        /* LDR PC: 2+P, a branch, nothing pipelines with it. */
        c = jump(2);
        return c;
    }
    if (load) {
        c.loaded = (uint16_t)(1u << rt);
    }
    /* Nothing pipelines after a store with a register offset. */
    c.pipes_next = t.pipelining && (load || rm >= 15);
    return c;
}

/* LDM/STM/PUSH/POP of `list` (bit n: Rn); with PC a branch. */
static struct cost multiple(bool load, unsigned list)
{
    unsigned n = (unsigned)__builtin_popcount(list);
    if (load && (list & 0x8000)) {
        return jump(1 + n);
    }
    return alu(1 + n);
}

static struct cost thumb16(unsigned h)
{
    switch (h >> 12) {
    case 0x0:
    case 0x1:
    case 0x2:
    case 0x3:
        return alu(1); /* shifts, add/sub, mov/cmp/add/sub immediate */
    case 0x4:
        if ((h & 0xfc00) == 0x4000) {
            return alu(1); /* data processing, MULS included (1 cycle) */
        }
        if ((h & 0xfc00) == 0x4400) {
            unsigned op = (h >> 8) & 3;
            if (op == 3) {
                return jump(1); /* BX, BLX */
            }
            unsigned rd = (h & 7) | ((h >> 4) & 8);
            if (op != 1 && rd == 15) {
                return jump(1); /* ADD PC, MOV PC */
            }
            return alu(1);
        }
        return single(true, (h >> 8) & 7, 15, 16); /* LDR literal */
    case 0x5: {
        unsigned opb = (h >> 9) & 7;
        return single(opb >= 3, h & 7, (h >> 3) & 7, (h >> 6) & 7);
    }
    case 0x6:
    case 0x7:
    case 0x8:
        return single((h >> 11) & 1, h & 7, (h >> 3) & 7, 16);
    case 0x9:
        return single((h >> 11) & 1, (h >> 8) & 7, 13, 16);
    case 0xa:
        return alu(1); /* ADR, ADD SP */
    case 0xb:
        if ((h & 0x0500) == 0x0100) {
            return jump(1); /* CBZ, CBNZ */
        }
        if ((h & 0x0e00) == 0x0400) {
            return multiple(false, (h & 0xff) | ((h & 0x100) << 6)); /* PUSH, LR is bit 14 */
        }
        if ((h & 0x0e00) == 0x0c00) {
            return multiple(true, (h & 0xff) | ((h & 0x100) << 7)); /* POP, PC is bit 15 */
        }
        return alu(1); /* SP adjust, extends, REV, CPS, BKPT, IT, hints */
    case 0xc:
        return multiple((h >> 11) & 1, h & 0xff); /* STM, LDM */
    case 0xd:
        if (((h >> 8) & 0xf) >= 0xe) {
            return alu(1); /* UDF, SVC */
        }
        return jump(1); /* B<cond> */
    default:
        return jump(1); /* 0xe: B */
    }
}

/* Floating point (coprocessors 10 and 11), FPv4-SP/FPv5. */
static struct cost vfp(unsigned h1, unsigned h2)
{
    bool dbl = (h2 >> 8) & 1;
    if ((h1 & 0xef00) == 0xee00 || (h1 & 0xef00) == 0xef00) {
        if ((h1 & 0xff00) == 0xfe00 || (h1 & 0xef00) == 0xef00) {
            return alu(1); /* FPv5 VSEL, VMAXNM, VMINNM, VRINT, VCVTA... */
        }
        if (h2 & 0x10) {
            return alu(1); /* VMOV core <-> single or scalar, VMRS, VMSR */
        }
        unsigned opc1 = ((h1 >> 4) & 0xb); /* bits 23, 21, 20 of the A32 layout */
        unsigned opc2 = h1 & 0xf;
        unsigned opc3 = (h2 >> 6) & 3;
        switch (opc1) {
        case 0x0: /* VMLA, VMLS */
        case 0x1: /* VNMLA, VNMLS */
        case 0x9: /* VFNMA, VFNMS */
        case 0xa: /* VFMA, VFMS */
            return alu(3);
        case 0x8:
            return alu(14); /* VDIV */
        case 0xb:
            if (opc2 == 1 && opc3 == 3) {
                return alu(14); /* VSQRT */
            }
            return alu(1); /* VMOV immediate/register, VABS, VNEG, VCMP, VCVT */
        default:
            return alu(1); /* VMUL, VNMUL, VADD, VSUB */
        }
    }
    /* 0xec/0xed: extension register loads and stores, 64-bit transfers. */
    unsigned op = (h1 >> 4) & 0x1f;
    if ((op & 0x1e) == 0x04) {
        return alu(2); /* VMOV two core registers <-> two singles or a double */
    }
    if ((op & 0x12) == 0x10) {
        return alu(dbl ? 3 : 2); /* VLDR, VSTR */
    }
    return alu(1 + (h2 & 0xff)); /* VLDM, VSTM, VPUSH, VPOP: 1 + words */
}

static struct cost thumb32(unsigned h1, unsigned h2)
{
    unsigned op1 = (h1 >> 11) & 3;
    if ((h1 & 0x0c00) == 0x0c00 && op1 != 2 && ((h2 >> 9) & 7) == 5) {
        return vfp(h1, h2); /* coprocessor 10/11 */
    }
    if (op1 == 1) {
        if ((h1 & 0x0640) == 0x0000) {
            return multiple((h1 >> 4) & 1, h2); /* LDM, STM, PUSH.W, POP.W */
        }
        if ((h1 & 0x0640) == 0x0040) {
            unsigned o1 = (h1 >> 7) & 3, o2 = (h1 >> 4) & 3, o3 = (h2 >> 4) & 0xf;
            unsigned rn = h1 & 0xf, rt = h2 >> 12;
            if (o1 == 0 && o2 < 2) {
                return single(o2 == 1, rt, rn, 16); /* STREX, LDREX */
            }
            if (o1 == 1 && o2 == 1 && o3 < 2) {
                return jump(2); /* TBB, TBH */
            }
            if (o1 == 1 && o2 < 2) {
                return single(o2 == 1, rt, rn, 16); /* LDREX/STREX B, H, D */
            }
            return alu(3); /* LDRD, STRD */
        }
        return alu(1); /* data processing, shifted register; coprocessor otherwise */
    }
    if (op1 == 2) {
        if (!(h2 & 0x8000)) {
            return alu(1); /* data processing, immediate */
        }
        unsigned o = (h2 >> 12) & 5;
        if (o == 0) {
            if ((h1 & 0x0380) != 0x0380) {
                return jump(1); /* B<cond>.W */
            }
            return alu(t.system); /* MSR, MRS, hints, DMB, DSB, ISB */
        }
        if (o == 1) {
            return jump(1); /* B.W */
        }
        return jump(1 + t.bl_extra); /* BL */
    }
    /* op1 == 3 */
    if ((h1 & 0x0600) == 0x0000) {
        bool load = (h1 >> 4) & 1;
        unsigned rn = h1 & 0xf, rt = h2 >> 12, rm = 16;
        if (load && rt == 15 && ((h1 >> 5) & 3) != 2) {
            return alu(1); /* PLD, PLI */
        }
        if (!(h1 & 0x80) && rn != 15 && (h2 & 0x0fc0) == 0) {
            rm = h2 & 0xf; /* register offset */
        }
        return single(load, rt, rn, rm);
    }
    if ((h1 & 0x0780) == 0x0300) {
        /* Multiply, multiply-accumulate, absolute difference. */
        if ((h1 & 0x70) == 0 && (h2 & 0x30) == 0x00 && (h2 >> 12) == 0xf) {
            return alu(1); /* MUL */
        }
        if ((h1 & 0x70) == 0) {
            return alu(t.mla); /* MLA, MLS */
        }
        return alu(1); /* SMULxy, SMLAxy, SMLAD, SMUAD, SMMUL, SMMLA, USAD8, ... */
    }
    if ((h1 & 0x0780) == 0x0380) {
        /* Long multiply, long multiply-accumulate, divide. */
        unsigned o1 = (h1 >> 4) & 7, o2 = (h2 >> 4) & 0xf;
        if (o2 == 0xf) {
            return alu(t.div); /* SDIV, UDIV */
        }
        if ((o1 == 0 || o1 == 2) && o2 == 0) {
            return alu(t.long_mul); /* SMULL, UMULL */
        }
        return alu(t.long_mac); /* SMLAL, UMLAL, UMAAL, SMLALxy, SMLALD, SMLSLD */
    }
    return alu(1); /* data processing, register: shifts, extends, SIMD add/sub, misc */
}

/*
 * An instruction's width in bytes, from its first halfword: 0b11101, 0b11110 and 0b11111 in its
 * top five bits begin a 32-bit encoding. Not QEMU's size: QEMU 7.2 reports a 16-bit instruction
 * just before a page-crossing 32-bit one with size 4, so the estimate of the same code would
 * move with where it is placed.
 */
static unsigned thumb_width(const struct qemu_plugin_insn *insn)
{
    const uint8_t *b = qemu_plugin_insn_data(insn);
    return (b[1] >> 3) < 0x1d ? 2 : 4;
}

/* An instruction's halfwords (h2 0 for a 16-bit one); whether it is a 32-bit one. */
static bool halfwords(const struct qemu_plugin_insn *insn, unsigned *h1, unsigned *h2)
{
    const uint8_t *b = qemu_plugin_insn_data(insn);
    bool wide = thumb_width(insn) == 4;
    *h1 = b[0] | (unsigned)b[1] << 8;
    *h2 = wide ? b[2] | (unsigned)b[3] << 8 : 0;
    return wide;
}

static struct cost classify(unsigned h1, unsigned h2, bool wide)
{
    return wide ? thumb32(h1, h2) : thumb16(h1);
}

/* What a Helium unit an instruction takes: none (a scalar or floating-point one), the vector
 * loads and stores, or the vector arithmetic. */
enum helium { HELIUM_NONE, HELIUM_MEMORY, HELIUM_ARITHMETIC };

/* Helium's encodings are the coprocessor space's: 0xEF and 0xFF (vector data processing), and
 * the loads, stores and data processing of coprocessors 14 and 15 (bits 11:9 of the second
 * halfword 0b111; floating point is coprocessors 10 and 11). A few moves between vector lanes
 * and core registers sit in the floating point's space and are costed as its. */
static enum helium helium_of(unsigned h1, unsigned h2, bool wide)
{
    if (!wide || (h1 & 0xec00) != 0xec00) {
        return HELIUM_NONE;
    }
    bool vector_space = ((h1 >> 8) & 0xef) == 0xef;
    bool coprocessor_14_15 = ((h2 >> 9) & 7) == 7;
    if (!vector_space && !coprocessor_14_15) {
        return HELIUM_NONE;
    }
    return ((h1 >> 9) & 7) == 6 ? HELIUM_MEMORY : HELIUM_ARITHMETIC;
}

/* The Cortex-M55's cost of a Helium instruction of kind `h` after one of kind `before`: two
 * cycles, one when the two overlap. */
static unsigned helium_cycles(enum helium h, enum helium before)
{
    return before != HELIUM_NONE && before != h ? 1 : 2;
}

/* One translation block: its cycles when run from its start to its end (taken branches
 * aside), and what the blocks around it need to know of its first and last instructions. */
struct block {
    uint64_t start;
    uint64_t fallthrough;   /* the address after its last instruction */
    uint32_t cycles;
    uint16_t first_address; /* its first instruction's address registers ... */
    uint16_t last_loaded;   /* the register its last instruction loads */
    uint8_t taken;          /* added when the next block is not its fallthrough */
    bool branch;            /* its last instruction may write PC */
    bool first_ldst;        /* ... when that is a single load or store */
    bool last_pipes;        /* the next single load or store pipelines after its last */
};

static const struct block *previous;

/* Each block as it begins: its own cycles, the refill when the block before it ended in a
 * branch that was taken, and the cycle saved when a load or store begins it that pipelines
 * after the one that ended the block before. */
static void on_block(unsigned int vcpu, void *data)
{
    (void)vcpu;
    const struct block *b = data;
    const struct block *p = previous;
    uint64_t add = b->cycles;
    if (p && p->branch) {
        add += b->start != p->fallthrough ? p->taken : 0;
    } else if (p && p->last_pipes && b->first_ldst && !(b->first_address & p->last_loaded)) {
        add -= 1;
    }
    cycles += add;
    previous = b;
}

/* ---- output ---------------------------------------------------------------------------- */

static void print_count(const char *label, uint64_t less)
{
    char line[96];
    if (core == CORE_NONE) {
        snprintf(line, sizeof line, "%s %" PRIu64 "\n", label, executed);
    } else {
        snprintf(line, sizeof line, "%s %" PRIu64 " %" PRIu64 "\n", label, executed,
                 cycles - less);
    }
    qemu_plugin_outs(line);
}

static void on_store(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *data)
{
    (void)vcpu, (void)info;
    if (vaddr == marker) {
        /* The block's cycles were counted as it began: less those of its instructions after
         * this store. */
        print_count("kiln-insn", (uint64_t)(uintptr_t)data);
    }
}

/* The M4's, M33's, M55's, M3's or M0's cost of each of the block's `n` instructions, one at a
 * time, with the load/store pipelining between neighbours; what the block's neighbours need of
 * it. */
static void in_order(struct qemu_plugin_tb *tb, size_t n, struct block *b, uint32_t *cost)
{
    struct cost prev = {0}, c = {0};
    enum helium vector_before = HELIUM_NONE;
    for (size_t i = 0; i < n; i++) {
        unsigned h1, h2;
        bool wide = halfwords(qemu_plugin_tb_get_insn(tb, i), &h1, &h2);
        c = classify(h1, h2, wide);
        if (core == CORE_M55) {
            enum helium vector = helium_of(h1, h2, wide);
            if (vector != HELIUM_NONE) {
                c = alu(helium_cycles(vector, vector_before));
            }
            vector_before = vector;
        }
        if (i > 0 && prev.pipes_next && c.ldst && !(c.address & prev.loaded)) {
            c.cycles -= 1;
        }
        if (i == 0) {
            b->first_ldst = c.ldst;
            b->first_address = c.address;
        }
        cost[i] = c.cycles;
        prev = c;
    }
    b->branch = c.branch;
    b->taken = (uint8_t)c.taken;
    b->last_pipes = c.pipes_next;
    b->last_loaded = c.loaded;
}

/* The Cortex-M7's: what each instruction adds to the block as they issue two at a time. */
static void dual(struct qemu_plugin_tb *tb, size_t n, struct block *b, uint32_t *cost)
{
    struct m7_issue issue = {0};
    struct cost c = {0};
    for (size_t i = 0; i < n; i++) {
        unsigned h1, h2;
        bool wide = halfwords(qemu_plugin_tb_get_insn(tb, i), &h1, &h2);
        c = classify(h1, h2, wide);
        struct m7_insn m = m7_decode(h1, h2, wide);
        cost[i] = m7_issue(&issue, &m, c.cycles);
    }
    b->branch = c.branch;
    b->taken = (uint8_t)c.taken;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    if (core == CORE_NONE) {
        for (size_t i = 0; i < n; i++) {
            struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
            qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
                                                       &executed, 1);
            qemu_plugin_register_vcpu_mem_cb(insn, on_store, QEMU_PLUGIN_CB_NO_REGS,
                                             QEMU_PLUGIN_MEM_W, NULL);
        }
        return;
    }
    /* Blocks are never freed: QEMU may run a translation until it ends, and there are few. */
    struct block *b = calloc(1, sizeof *b);
    uint32_t *cost = calloc(n ? n : 1, sizeof *cost);
    if (!b || !cost) {
        abort();
    }
    if (core == CORE_M7) {
        dual(tb, n, b, cost);
    } else {
        in_order(tb, n, b, cost);
    }
    for (size_t i = 0; i < n; i++) {
        b->cycles += cost[i];
    }
    b->start = qemu_plugin_tb_vaddr(tb);
    if (n > 0) {
        struct qemu_plugin_insn *last = qemu_plugin_tb_get_insn(tb, n - 1);
        b->fallthrough = qemu_plugin_insn_vaddr(last) + thumb_width(last);
    }
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, b);
    uint64_t after = b->cycles;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        after -= cost[i];
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &executed, 1);
        qemu_plugin_register_vcpu_mem_cb(insn, on_store, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_W,
                                         (void *)(uintptr_t)after);
    }
    free(cost);
}

static void on_guest_exit(qemu_plugin_id_t id, void *data)
{
    (void)id, (void)data;
    print_count("kiln-insn-total", 0);
}

__attribute__((visibility("default"))) int
qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "marker=", 7) == 0) {
            marker = strtoull(argv[i] + 7, NULL, 0);
        } else if (strncmp(argv[i], "core=", 5) == 0) {
            const char *name = argv[i] + 5;
            if (strcmp(name, "m4") == 0) {
                core = CORE_M4, t = M4;
            } else if (strcmp(name, "m33") == 0) {
                core = CORE_M33, t = M4;
            } else if (strcmp(name, "m7") == 0) {
                core = CORE_M7, t = M4;
            } else if (strcmp(name, "m55") == 0) {
                core = CORE_M55, t = M4;
            } else if (strcmp(name, "m3") == 0) {
                core = CORE_M3, t = M3;
            } else if (strcmp(name, "m0") == 0) {
                core = CORE_M0, t = M0;
            } else {
                qemu_plugin_outs("kiln-insn: core= is one of m0, m3, m4, m33, m7, m55\n");
                return -1;
            }
        }
    }
    if (marker == 0) {
        qemu_plugin_outs("kiln-insn: missing plugin argument marker=0x...\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_guest_exit, NULL);
    return 0;
}
