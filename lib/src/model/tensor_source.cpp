// The index every tensor source shares: names and what each tensor is, filled once on opening.
#include "attn/model/tensor_source.hpp"

namespace attn::model {

std::vector<std::string> TensorSource::names() const {
    std::vector<std::string> out;
    out.reserve(tensors_.size());
    for (const auto& [name, info] : tensors_) {
        out.push_back(name);
    }
    return out;
}

const TensorInfo* TensorSource::find(std::string_view name) const {
    const auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
}

void TensorSource::add(TensorInfo info) {
    std::string name = info.name;
    tensors_.emplace(std::move(name), std::move(info));
}

} // namespace attn::model
