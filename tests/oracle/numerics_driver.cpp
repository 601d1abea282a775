// Test-only driver for numerics_oracle.py: reads {"cases": [...]} (JSON) on stdin, runs
// each case through the core's RoPE, norms and embedding lookups in float32 or float64,
// and writes {"results": [{"outputs": [{"shape", "data"}]} | {"error": "..."}]} on stdout.
// It holds no numerics of its own: the oracle computes the expected values in numpy.
#include "attn/embedding.hpp"
#include "attn/error.hpp"
#include "attn/model/hf_config.hpp"
#include "attn/norm.hpp"
#include "attn/rope.hpp"

#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

namespace {

using json = nlohmann::json;

template <class X> X tensor_from(const json& j) {
    const auto shape = j.at("shape").get<std::vector<std::size_t>>();
    const auto data = j.at("data").get<std::vector<double>>();
    using T = typename X::value_type;
    X x = X::from_shape(shape);
    if (x.size() != data.size()) {
        throw std::runtime_error("driver: data does not fit shape");
    }
    std::size_t i = 0;
    for (auto& v : x) {
        v = static_cast<T>(data[i++]);
    }
    return x;
}

template <class X> json tensor_to(const X& x) {
    json data = json::array();
    for (const auto& v : x) {
        data.push_back(static_cast<double>(v));
    }
    return {{"shape", std::vector<std::size_t>(x.shape().begin(), x.shape().end())},
            {"data", data}};
}

attn::RopeSpec rope_spec(const json& c) {
    attn::RopeSpec s;
    s.theta = c.value("theta", 10000.0);
    s.style =
        c.value("style", "neox") == "neox" ? attn::RopeStyle::neox : attn::RopeStyle::interleaved;
    s.dim = c.value("dim", std::size_t{0});
    if (c.contains("scaling")) {
        s.scaling = attn::model::parse_rope_scaling(c["scaling"], "rope.scaling");
    }
    return s;
}

template <class T> json run(const json& c) {
    using T4 = xt::xtensor<T, 4>;
    using T3 = xt::xtensor<T, 3>;
    using T2 = xt::xtensor<T, 2>;
    using T1 = xt::xtensor<T, 1>;
    const std::string op = c.at("op");
    json outputs = json::array();
    if (op == "rope") {
        const attn::RopeSpec spec = rope_spec(c);
        T4 q = tensor_from<T4>(c.at("q"));
        if (c.contains("k")) {
            T4 k = tensor_from<T4>(c.at("k"));
            attn::RopePositions pos;
            if (c.contains("positions")) {
                pos.query = c["positions"].at("query").get<std::vector<std::int64_t>>();
                pos.key = c["positions"].at("key").get<std::vector<std::int64_t>>();
            } else if (c.contains("offset")) {
                pos = attn::rope_positions(q.shape(2), k.shape(2), c["offset"].get<std::int64_t>());
            }
            attn::apply_rope(q, k, spec, pos);
            outputs.push_back(tensor_to(q));
            outputs.push_back(tensor_to(k));
        } else {
            const auto pos = c.at("positions").get<std::vector<std::int64_t>>();
            attn::apply_rope(q, spec, pos);
            outputs.push_back(tensor_to(q));
        }
    } else if (op == "layer_norm" || op == "rms_norm") {
        const T3 x = tensor_from<T3>(c.at("x"));
        const T1 w = tensor_from<T1>(c.at("weight"));
        const double eps = c.at("eps");
        if (op == "rms_norm") {
            outputs.push_back(tensor_to(attn::rms_norm(x, w, eps)));
        } else if (c.contains("bias")) {
            const T1 b = tensor_from<T1>(c["bias"]);
            outputs.push_back(tensor_to(attn::layer_norm(x, w, &b, eps)));
        } else {
            outputs.push_back(tensor_to(attn::layer_norm(x, w, nullptr, eps)));
        }
    } else if (op == "embed") {
        attn::BasicEmbeddings<T> e;
        e.token = tensor_from<T2>(c.at("token"));
        if (c.contains("position")) {
            e.position = tensor_from<T2>(c["position"]);
        }
        if (c.contains("token_type")) {
            e.token_type = tensor_from<T2>(c["token_type"]);
        }
        if (c.contains("norm")) {
            attn::BasicNorm<T> n;
            n.weight = tensor_from<T1>(c["norm"].at("weight"));
            n.bias = tensor_from<T1>(c["norm"].at("bias"));
            n.eps = c["norm"].at("eps");
            e.norm = n;
        }
        const auto ids = tensor_from<attn::TokenIds>(c.at("ids"));
        outputs.push_back(tensor_to(attn::embed(ids, e, c.value("offset", std::size_t{0}))));
    } else {
        throw std::runtime_error("driver: unknown op " + op);
    }
    return {{"outputs", outputs}};
}

} // namespace

int main() {
    try {
        const std::string text{std::istreambuf_iterator<char>(std::cin),
                               std::istreambuf_iterator<char>()};
        const json doc = json::parse(text);
        json results = json::array();
        for (const json& c : doc.at("cases")) {
            try {
                results.push_back(c.value("precision", "f32") == "f64" ? run<double>(c)
                                                                       : run<float>(c));
            } catch (const attn::InputError& e) {
                results.push_back({{"error", e.what()}});
            }
        }
        std::cout << json{{"results", results}}.dump() << '\n';
        return 0;
    } catch (const std::exception& e) {
        // Not the library's errors (those are results): a broken request from the oracle.
        std::cerr << "numerics_driver: " << e.what() << '\n';
        return 1;
    }
}
