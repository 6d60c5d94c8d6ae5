/*
 * Instruction counter for Kiln's emulated boards, as a QEMU TCG plugin.
 *
 * Counts every instruction the guest executes and, whenever the guest stores to the marker
 * address (plugin argument `marker=0x...`), prints the running count as `kiln-insn <count>`.
 * The firmware stores to its marker before and after each kernel, so the difference between
 * two consecutive lines is the cost of one kernel. The count is exact and identical run to run.
 *
 *   qemu-system-arm ... -plugin libinsn.so,marker=0x20000000 -d plugin -D insn.log
 *
 * Debian ships no qemu-plugin.h, so the few declarations of the plugin API (version 1, QEMU 7.2)
 * this file uses are written out below.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
typedef void (*atexit_cb)(qemu_plugin_id_t, void *);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, tb_trans_cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *, enum qemu_plugin_op,
                                                void *, uint64_t);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *, mem_cb,
                                      enum qemu_plugin_cb_flags, enum qemu_plugin_mem_rw, void *);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, atexit_cb, void *);
void qemu_plugin_outs(const char *);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static uint64_t executed;
static uint64_t marker;

static void print_count(const char *label)
{
    char line[64];
    snprintf(line, sizeof line, "%s %" PRIu64 "\n", label, executed);
    qemu_plugin_outs(line);
}

static void on_store(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *data)
{
    (void)vcpu, (void)info, (void)data;
    if (vaddr == marker) {
        print_count("kiln-insn");
    }
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    for (size_t i = 0, n = qemu_plugin_tb_n_insns(tb); i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &executed, 1);
        qemu_plugin_register_vcpu_mem_cb(insn, on_store, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_W,
                                         NULL);
    }
}

static void on_guest_exit(qemu_plugin_id_t id, void *data)
{
    (void)id, (void)data;
    print_count("kiln-insn-total");
}

__attribute__((visibility("default"))) int
qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "marker=", 7) == 0) {
            marker = strtoull(argv[i] + 7, NULL, 0);
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
