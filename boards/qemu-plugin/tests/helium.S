/*
 * Helium (MVE) loops whose Cortex-M55 cycle counts follow from the plugin's model of the core
 * (boards/qemu-plugin/insn.c, `core=m55`: the scalar instructions at the Cortex-M4's figures, a
 * Helium instruction 2 cycles, 1 where it follows one of the other kind, a vector load or store
 * after vector arithmetic or the other way round), worked out by hand in
 * codegen/runners/tests/cycle_model.rs. Bare metal on QEMU's mps3-an547, which boots from its
 * ITCM at 0x10000000: each case stores to the marker (0x11000000, the SRAM) before and after
 * it. The program ends through semihosting SYS_EXIT.
 *
 *   arm-none-eabi-gcc -mcpu=cortex-m55 -mfloat-abi=hard -mthumb -nostdlib \
 *       -Ttext=0x10000000 -o helium.elf helium.S
 *   qemu-system-arm -machine mps3-an547 -cpu cortex-m55 -nographic \
 *       -semihosting-config enable=on,target=native -kernel helium.elf \
 *       -plugin target/qemu-plugin/libinsn.so,marker=0x11000000,core=m55 -d plugin -D insn.log
 */
    .syntax unified
    .thumb

    .section .text
    .global _start
vectors:
    .word 0x11010000                @ initial SP
    .word _start + 1                @ reset, a Thumb address
    .rept 14
    .word hang + 1
    .endr

    .thumb_func
hang:
    b hang

    .thumb_func
_start:
    @ Enable the FPU and Helium (CPACR: CP10, CP11 full access).
    ldr r0, =0xE000ED88
    ldr r1, [r0]
    orr r1, r1, #(0xF << 20)
    str r1, [r0]
    dsb
    isb
    ldr r6, =0x11000000             @ the marker
    ldr r1, =0x11000100             @ data
    vldrb.8 q1, [r1, #48]
    movs r0, #0
    movs r2, #0

    @ (a) loads and dot products interleaved
    str r0, [r6]
    movs r4, #100
a_loop:
    vldrb.8 q0, [r1]
    vmladava.s8 r0, q0, q1
    vldrb.8 q2, [r1, #16]
    vmladava.s8 r2, q2, q1
    subs r4, #1
    bne a_loop
    str r0, [r6]

    @ (b) the same, grouped by kind
    str r0, [r6]
    movs r4, #100
b_loop:
    vldrb.8 q0, [r1]
    vldrb.8 q2, [r1, #16]
    vmladava.s8 r0, q0, q1
    vmladava.s8 r2, q2, q1
    subs r4, #1
    bne b_loop
    str r0, [r6]

    @ (c) a scalar instruction between a load and its dot product
    str r0, [r6]
    movs r4, #100
c_loop:
    vldrb.8 q0, [r1]
    adds r3, r3, #1
    vmladava.s8 r0, q0, q1
    subs r4, #1
    bne c_loop
    str r0, [r6]

    @ (d) vector arithmetic and a vector store
    str r0, [r6]
    movs r4, #100
d_loop:
    vadd.i8 q3, q0, q1
    vstrb.8 q3, [r1, #32]
    vmul.i32 q3, q0, q1
    vmov.i32 q2, #0
    subs r4, #1
    bne d_loop
    str r0, [r6]

    @ (e) a low-overhead loop
    str r0, [r6]
    movs r4, #100
    dls lr, r4
e_loop:
    vldrb.8 q0, [r1]
    vmladava.s8 r0, q0, q1
    le lr, e_loop
    str r0, [r6]

    @ SYS_EXIT, ADP_Stopped_ApplicationExit
    movs r0, #0x18
    ldr r1, =0x20026
    bkpt 0xab
    b hang

    .ltorg
