/* Kernels of the add-relu test bundle, written by hand as the compiler would generate them:
 * each kernel has typed parameters, and a wrapper of the runtime's ABI unpacks them from the
 * step's argument pointers. */

typedef void (*kiln_kernel_fn)(void *const *args);

float expf(float x);

static void add_8(float *restrict out, const float *restrict a, const float *restrict b)
{
    for (int i = 0; i < 8; i++) {
        out[i] = a[i] + b[i];
    }
}

static void relu_8(float *restrict out, const float *restrict x)
{
    for (int i = 0; i < 8; i++) {
        out[i] = x[i] > 0.0f ? x[i] : 0.0f;
    }
}

static void sigmoid_8(float *restrict out, const float *restrict x)
{
    for (int i = 0; i < 8; i++) {
        out[i] = 1.0f / (1.0f + expf(-x[i]));
    }
}

void kiln_add_8(void *const *args) { add_8(args[0], args[1], args[2]); }
void kiln_relu_8(void *const *args) { relu_8(args[0], args[1]); }
void kiln_sigmoid_8(void *const *args) { sigmoid_8(args[0], args[1]); }

const kiln_kernel_fn kiln_kernels[] = { kiln_add_8, kiln_relu_8, kiln_sigmoid_8 };
const unsigned int kiln_kernel_count = sizeof kiln_kernels / sizeof kiln_kernels[0];
