/*
 * Loops whose Cortex-M4 cycle counts follow from the Technical Reference Manual, and whose
 * Cortex-M7 counts follow from the dual-issue rules of boards/qemu-plugin/dual_issue.c, for the
 * cycle estimate of the QEMU plugin (boards/qemu-plugin/insn.c). Bare metal on QEMU's mps2-an386:
 * each case stores to the marker (0x20000000) before and after it; the cycles between two marks
 * are worked out by hand in codegen/runners/tests/cycle_model.rs. The program ends through
 * semihosting SYS_EXIT.
 *
 *   arm-none-eabi-gcc -mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard -mthumb -nostdlib \
 *       -Ttext=0 -o loops.elf loops.S
 *   qemu-system-arm -machine mps2-an386 -cpu cortex-m4 -nographic \
 *       -semihosting-config enable=on,target=native -kernel loops.elf \
 *       -plugin target/qemu-plugin/libinsn.so,marker=0x20000000,core=m4 -d plugin -D insn.log
 */
    .syntax unified
    .thumb

    .section .text
    .global _start
vectors:
    .word 0x20010000                @ initial SP
    .word _start + 1                @ reset, a Thumb address
    .rept 14
    .word hang + 1
    .endr

    .thumb_func
hang:
    b hang

    .thumb_func
_start:
    @ Enable the FPU (CPACR: CP10, CP11 full access).
    ldr r0, =0xE000ED88
    ldr r1, [r0]
    orr r1, r1, #(0xF << 20)
    str r1, [r0]
    dsb
    isb
    ldr r6, =0x20000000             @ the marker
    ldr r1, =0x20000100             @ data
    ldr r8, =0x20000200             @ more data
    str r1, [r1]                    @ a word that points to itself
    movs r0, #3
    movs r3, #7
    movs r2, #12
    movs r5, #0

    @ (a) loads pipelined into a DSP multiply-accumulate
    nop                             @ issues alone: the marker store begins a group (M7)
    str r0, [r6]
    movs r4, #100
a_loop:
    ldr r0, [r1]
    ldr r3, [r1, #4]
    smlad r5, r0, r3, r5
    subs r4, #1
    bne a_loop
    str r0, [r6]

    @ (b) multiplies
    movs r0, #3
    movs r3, #7
    nop                             @ issues alone: the marker store begins a group (M7)
    str r0, [r6]
    movs r4, #100
b_loop:
    mul r5, r0, r3
    mla r5, r0, r3, r5
    mls r5, r0, r3, r5
    smull r7, r9, r0, r3
    umlal r7, r9, r0, r3
    subs r4, #1
    bne b_loop
    str r0, [r6]

    @ (c) divisions
    nop                             @ issues alone: the marker store begins a group (M7)
    str r0, [r6]
    movs r4, #100
c_loop:
    sdiv r5, r0, r3
    udiv r5, r3, r0
    subs r4, #1
    bne c_loop
    str r0, [r6]

    @ (d) floating point loads and multiply-accumulates
    nop                             @ issues alone: the marker store begins a group (M7)
    str r0, [r6]
    movs r4, #100
d_loop:
    vldr s0, [r1]
    vldr s1, [r1, #4]
    vmla.f32 s2, s0, s1
    vadd.f32 s3, s3, s0
    vmul.f32 s4, s0, s1
    vfma.f32 s5, s0, s1
    subs r4, #1
    bne d_loop
    str r0, [r6]

    @ (e) multiple and double loads and stores
    nop                             @ issues alone: the marker store begins a group (M7)
    str r0, [r6]
    movs r4, #100
e_loop:
    push {r0-r3}
    pop {r0-r3}
    ldmia.w r1, {r0, r2, r3}
    stmia.w r8, {r0, r2, r3}
    ldrd r0, r2, [r1]
    strd r0, r2, [r8]
    subs r4, #1
    bne e_loop
    str r0, [r6]

    @ (f) branches not taken, a taken forward branch, an IT block
    movs r7, #1
    nop                             @ issues alone: the marker store begins a group (M7)
    str r0, [r6]
    movs r4, #100
f_loop:
    cmp r4, #200
    beq f_never
    cbz r7, f_over
    b f_over
    nop
f_over:
    cmp r4, #50
    it hi
    addhi r5, #1
    subs r4, #1
    bne f_loop
    str r0, [r6]

    @ (g) a load whose address is the load before it: not pipelined
    nop                             @ issues alone: the marker store begins a group (M7)
    str r0, [r6]
    movs r4, #100
g_loop:
    ldr r2, [r1]
    ldr r3, [r2]
    str r3, [r1, #8]
    subs r4, #1
    bne g_loop
    str r0, [r6]

    @ (h) nothing pipelines after a store with a register offset; stores pipeline after stores
    movs r2, #12
    nop                             @ issues alone: the marker store begins a group (M7)
    str r0, [r6]
    movs r4, #100
h_loop:
    str r0, [r1, r2]
    ldr r3, [r1]
    str r3, [r1, #4]
    str r3, [r1, #8]
    ldrb r5, [r1, #1]
    subs r4, #1
    bne h_loop
    str r0, [r6]

    @ (i) calls and returns
    nop                             @ issues alone: the marker store begins a group (M7)
    str r0, [r6]
    movs r4, #10
i_loop:
    bl i_push_pop
    bl i_bx
    subs r4, #1
    bne i_loop
    str r0, [r6]

    @ (j) the rest of the floating point unit, once
    nop                             @ issues alone: the marker store begins a group (M7)
    str r0, [r6]
    vpush {s16-s19}
    vpop {s16-s19}
    vldm r1, {s0-s3}
    vstm r8, {s0-s2}
    vdiv.f32 s4, s0, s1
    vsqrt.f32 s5, s0
    vmov r0, s0
    vmov s6, r0
    vmov r0, r3, d0
    vcvt.s32.f32 s7, s0
    vcmp.f32 s0, s1
    vmrs APSR_nzcv, fpscr
    vstr s0, [r8]
    vmov.f32 s8, #1.0
    vneg.f32 s9, s8
    str r0, [r6]

    @ (l) a packed dot product: two word loads of weights, one of activations widened in two
    @ halves, two DSP multiply-accumulates
    nop                             @ issues alone: the marker store begins a group (M7)
    str r0, [r6]
    movs r4, #100
l_loop:
    ldr r0, [r1]
    ldr r2, [r8]
    ldr r3, [r8, #4]
    sxtb16 r7, r0
    sxtb16 r0, r0, ror #8
    smlad r5, r7, r2, r5
    smlad r5, r0, r3, r5
    subs r4, #1
    bne l_loop
    str r0, [r6]

    @ (m) two shifted operands, a load and the use of what it loaded
    nop                             @ issues alone: the marker store begins a group (M7)
    str r0, [r6]
    movs r4, #100
m_loop:
    add r2, r1, r3, lsl #2
    add r7, r1, r3, lsl #1
    ldr r0, [r1]
    adds r5, r0, #1
    subs r4, #1
    bne m_loop
    str r0, [r6]

    @ (k) a 16-bit instruction just before a 32-bit one that crosses a page (QEMU may report
    @ the 16-bit one with size 4: the plugin must cost it by its encoding)
    nop                             @ issues alone: the marker store begins a group (M7)
    str r0, [r6]
    movs r4, #100
    b k_loop
    .ltorg
    .balign 4096
    .space 4096 - 4
k_loop:
    cmp r4, #0                      @ 16-bit, at a page's last word
    mla r5, r5, r4, r5              @ 32-bit, its halves on two pages
    subs r4, #1
    bne k_loop
    str r0, [r6]

    @ SYS_EXIT, ADP_Stopped_ApplicationExit
    movs r0, #0x18
    ldr r1, =0x20026
    bkpt 0xab
    b hang

f_never:
    b hang

    .thumb_func
i_push_pop:
    push {r7, lr}
    pop {r7, pc}

    .thumb_func
i_bx:
    bx lr

    .ltorg
