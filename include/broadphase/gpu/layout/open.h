// Opens a layout header shared by GLSL and C++ (layout/common.h, layout/*.h): in C++ the
// namespace broadphase::gpu_layout, and in both languages BP_CONST, the spelling of a uint
// constant. Each such header includes it after its own includes and ends with
// layout/close.h. No include guard: it opens every header that includes it.
#ifdef __cplusplus
namespace broadphase::gpu_layout {
#define BP_CONST inline constexpr uint
#else
#define BP_CONST const uint
#endif
