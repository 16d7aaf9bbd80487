/* Preloaded (LD_PRELOAD) into the test processes of the sanitizer stage (scripts/sanitize.sh):
 * keeps the Khronos validation layer resident until exit. The Vulkan loader unloads the layer
 * at vkDestroyInstance; what the layer allocated for itself and keeps in its own statics
 * (synchronization validation keeps the most) then looks leaked to LeakSanitizer, from stacks in
 * a module that is gone, which no suppression can name. Opened here with RTLD_NODELETE, the
 * layer stays mapped: its statics stay reachable, and what is still reported names
 * libVkLayer_khronos_validation.so, which tests/sanitizers/lsan.supp suppresses. RTLD_LOCAL:
 * none of its symbols (it exports vkGetInstanceProcAddr) interposes the loader's. Built without
 * sanitizers by scripts/sanitize.sh. */
#include <dlfcn.h>

__attribute__((constructor)) static void keep_layer_resident(void) {
    dlopen("libVkLayer_khronos_validation.so", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
}
