// The registry of CPU methods behind the Structure interface, and the canonical pair helpers.
// Each method is one row of kMethods; make_structure looks names up there.
#include "broadphase/structure.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "brute_force.hpp"
#include "lbvh.hpp"
#include "sweep_and_prune.hpp"

namespace broadphase {
namespace {

struct Method {
    std::string_view name;
    std::unique_ptr<Structure> (*make)();
};

template <class T>
std::unique_ptr<Structure> make_one() {
    return std::make_unique<T>();
}

constexpr std::array kMethods = {
    Method{"brute_force", &make_one<BruteForce>},
    Method{"sweep_and_prune", &make_one<SweepAndPrune>},
    Method{"lbvh", &make_one<lbvh::LbvhStructure>},
};

}  // namespace

std::vector<std::string_view> cpu_method_names() {
    std::vector<std::string_view> names;
    for (const Method& m : kMethods) names.push_back(m.name);
    return names;
}

Result<std::unique_ptr<Structure>> make_structure(std::string_view method) {
    for (const Method& m : kMethods) {
        if (m.name == method) return m.make();
    }
    std::string known;
    for (const Method& m : kMethods) {
        if (!known.empty()) known += ", ";
        known += m.name;
    }
    return Error{ErrorCode::invalid_argument,
                 "unknown CPU method '" + std::string(method) + "' (known: " + known + ")",
                 std::nullopt, std::nullopt};
}

std::vector<Pair> sorted_pairs(const Structure& structure) {
    std::vector<Pair> pairs;
    structure.self_pairs(pairs);
    std::sort(pairs.begin(), pairs.end());
    return pairs;
}

Result<std::vector<Pair>> find_pairs_cpu(std::string_view method, std::span<const Box> boxes) {
    auto structure = make_structure(method);
    if (!structure) return structure.error();
    if (Status s = (*structure)->build(boxes); !s) return s.error();
    return sorted_pairs(**structure);
}

}  // namespace broadphase
