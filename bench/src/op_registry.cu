// bench/src/op_registry.cu: the list the ops/ translation units add to.
#include "op_registry.hpp"

#include <algorithm>
#include <deque>
#include <utility>

namespace nkbench {
namespace {

// A deque: registering never moves the specs already handed out.
std::deque<OpSpec>& ops() {
  static std::deque<OpSpec> list;  // function-local: safe from static initializers of other files
  return list;
}

}  // namespace

bool register_op(OpSpec spec) {
  ops().push_back(std::move(spec));
  return true;
}

std::vector<const OpSpec*> registered_ops() {
  std::vector<const OpSpec*> out;
  for (const OpSpec& s : ops()) out.push_back(&s);
  std::sort(out.begin(), out.end(), [](const OpSpec* a, const OpSpec* b) {
    return a->name != b->name ? a->name < b->name : static_cast<int>(a->dtype) < static_cast<int>(b->dtype);
  });
  return out;
}

}  // namespace nkbench
