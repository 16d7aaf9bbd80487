#!/bin/sh
# Builds the climb kernels (SPIR-V next to this script) and the host (./lavapipe_climb).
set -e
cd "$(dirname "$0")"
G="glslc --target-env=vulkan1.3 -O"
$G a0_return.comp -o a0_return.spv
$G a_while.comp -o a_while_add.spv
$G -DFLAG_OP=1 a_while.comp -o a_while_xor.spv
$G -DFLAG_OP=2 a_while.comp -o a_while_xchg.spv
$G b_vmm.comp -o b_vmm.spv
$G -DFLAG_OP=1 b_vmm.comp -o b_vmm_xor.spv
$G -DFLAG_OP=2 b_vmm.comp -o b_vmm_xchg.spv
$G -DB_COHERENT b_vmm.comp -o b_vmm_coherent.spv
$G c_subgroup_any.comp -o c_subgroup_any.spv
$G d_store_first.comp -o d_store_first.spv
$G e_unrolled64.comp -o e_unrolled64.spv
$G f_fixed96.comp -o f_fixed96.spv
$G -DF_RUNTIME f_fixed96.comp -o f_runtime96.spv
$G g_no_sync.comp -o g_no_sync.spv
$G m_min.comp -o m_plain.spv
$G -DCOH_VAL m_min.comp -o m_cohval.spv
$G -DCOH_FLAGS m_min.comp -o m_cohflags.spv
$G -DBARRIER m_min.comp -o m_barrier.spv
$G -DCOH_VAL -DCOH_FLAGS -DBARRIER m_min.comp -o m_all.spv
for p in 0 1 2 3 4; do $G -DPROBE=$p p_probe.comp -o p_probe$p.spv; done
g++ -std=c++20 -O1 -Wall -o lavapipe_climb lavapipe_climb.cpp -lvulkan
