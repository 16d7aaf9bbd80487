// Closes what layout/open.h opened: the C++ namespace broadphase::gpu_layout and BP_CONST.
// No include guard: it closes every header that includes it.
#ifdef __cplusplus
}  // namespace broadphase::gpu_layout
#endif
#undef BP_CONST
