// Stopping a run from outside (attn/interruption.hpp): parallel_for's tasks start at an
// interruption point of their caller's scope; once its check says stop, no task starts on
// any thread and Interrupted reaches the caller. The element-wise stages of a model run in
// fixed chunks (parallel_chunks), so their values do not depend on the threads.
#include "attn/block.hpp"
#include "attn/error.hpp"
#include "attn/interruption.hpp"
#include "attn/norm.hpp"
#include "attn/parallel.hpp"
#include "attn/rope.hpp"
#include "unit/test_util.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <gtest/gtest.h>
#include <numbers>
#include <thread>

namespace {

using attn::detail::InterruptionScope;
using namespace std::chrono_literals;

/// Runs `tasks` tasks of about 1 ms each on `threads` threads; returns how many ran.
std::size_t tasks_run(std::size_t tasks, unsigned threads) {
    std::atomic<std::size_t> ran{0};
    attn::detail::parallel_for(tasks, threads, [&](unsigned, std::size_t) {
        std::this_thread::sleep_for(1ms);
        ++ran;
    });
    return ran.load();
}

TEST(Interruption, WithoutAScopeEveryTaskRuns) {
    EXPECT_EQ(attn::detail::current_interruption_scope(), nullptr);
    EXPECT_NO_THROW(attn::detail::interruption_point());
    EXPECT_EQ(tasks_run(50, 2), 50U);
}

TEST(Interruption, ACheckThatNeverStopsChangesNothing) {
    int checks = 0;
    const InterruptionScope scope([&checks] { return ++checks < 0; }, 0ms);
    EXPECT_EQ(tasks_run(40, 2), 40U);
    EXPECT_GT(checks, 0); // asked, on this thread (worker 0), at its tasks' starts
    EXPECT_FALSE(scope.stopped());
}

TEST(Interruption, EveryThreadStopsOnceTheCheckSaysSo) {
    for (const unsigned threads : {1U, 2U, 4U}) {
        int checks = 0;
        const InterruptionScope scope([&checks] { return ++checks == 5; }, 0ms);
        std::size_t ran = 0;
        EXPECT_THROW(ran = tasks_run(10000, threads), attn::Interrupted);
        EXPECT_EQ(ran, 0U);
        EXPECT_TRUE(scope.stopped());
        EXPECT_EQ(checks, 5);
        // Stopped stays stopped: any later point throws without asking again.
        EXPECT_THROW(attn::detail::interruption_point(), attn::Interrupted);
        EXPECT_THROW(tasks_run(10, threads), attn::Interrupted);
        EXPECT_EQ(checks, 5) << threads << " threads";
    }
    EXPECT_EQ(attn::detail::current_interruption_scope(), nullptr); // each scope ended
}

TEST(Interruption, StopsSoonAfterTheCheckSaysSo) {
    // 2 threads, 10,000 tasks of 1 ms (5 s): a check every 20 ms that stops after 100 ms.
    const auto start = std::chrono::steady_clock::now();
    const InterruptionScope scope([&] { return std::chrono::steady_clock::now() - start > 100ms; },
                                  20ms);
    std::atomic<std::size_t> ran{0};
    EXPECT_THROW(attn::detail::parallel_for(10000,
                                            2,
                                            [&](unsigned, std::size_t) {
                                                std::this_thread::sleep_for(1ms);
                                                ++ran;
                                            }),
                 attn::Interrupted);
    EXPECT_LT(ran.load(), 1000U); // about 250 ran: stopped within 0.5 s of 5 s
}

TEST(Interruption, NestedLoopsStopTheOuterOne) {
    int checks = 0;
    const InterruptionScope scope([&checks] { return ++checks == 3; }, 0ms);
    std::atomic<std::size_t> inner{0};
    EXPECT_THROW(attn::detail::parallel_for(
                     100, 2, [&](unsigned, std::size_t) { inner += tasks_run(10, 2); }),
                 attn::Interrupted);
    EXPECT_LT(inner.load(), 1000U);
}

TEST(StageThreads, NormsActivationsAndRopeWhateverTheThreads) {
    // 3 x 250 rows of 96: chunks of 170 rows, the last one short; heads of 24 for q/k norms.
    const std::vector<float> v = attn::testing::random_floats(std::size_t{3} * 250 * 96, 7);
    attn::Tensor3 x = attn::Tensor3::from_shape({3, 250, 96});
    std::copy(v.begin(), v.end(), x.data());
    attn::Norm ln{.kind = attn::NormKind::layer_norm,
                  .weight = attn::Vector::from_shape({96}),
                  .bias = attn::Vector::from_shape({96}),
                  .eps = 1e-5};
    for (std::size_t i = 0; i < 96; ++i) {
        ln.weight(i) = 1.0F + static_cast<float>(i) / 96.0F;
        (*ln.bias)(i) = static_cast<float>(i) / 200.0F;
    }
    attn::Norm rms = ln;
    rms.kind = attn::NormKind::rms_norm;
    const auto same = [](const auto& a, const auto& b, const char* what) {
        ASSERT_EQ(a.shape(), b.shape()) << what;
        for (std::size_t i = 0; i < a.size(); ++i) {
            ASSERT_EQ(a.data()[i], b.data()[i]) << what << " [" << i << "]";
        }
    };
    attn::RopeSpec rope;
    rope.theta = 10000.0;
    attn::Tensor q1 = attn::Tensor::from_shape({3, 4, 250, 24});
    attn::Tensor k1 = attn::Tensor::from_shape({3, 2, 250, 24});
    std::copy_n(x.data(), q1.size(), q1.data());
    std::copy_n(x.data() + 1, k1.size(), k1.data());
    attn::apply_rope(q1, k1, rope, {}, 1);
    attn::Tensor3 act1 = x;
    attn::activate(act1.data(), act1.size(), attn::Activation::gelu_erf, 1);
    // Every row normalized, each by its own values (a chunk's rows right, none skipped).
    const attn::Tensor3 ln1 = attn::apply_norm(x, ln, 1);
    for (std::size_t r = 0; r < 750; ++r) {
        double mean = 0.0;
        double sq = 0.0;
        for (std::size_t i = 0; i < 96; ++i) {
            mean += static_cast<double>(x.data()[r * 96 + i]) / 96.0;
        }
        for (std::size_t i = 0; i < 96; ++i) {
            const double d = static_cast<double>(x.data()[r * 96 + i]) - mean;
            sq += d * d / 96.0;
        }
        const double want = (static_cast<double>(x.data()[r * 96 + 5]) - mean) /
                                std::sqrt(sq + 1e-5) * static_cast<double>(ln.weight(5)) +
                            static_cast<double>((*ln.bias)(5));
        ASSERT_NEAR(ln1.data()[r * 96 + 5], want, 1e-5) << "row " << r;
    }
    // Every rotated row turned by its own position: pair 0's angle grows by l (theta^0 = 1).
    for (std::size_t row = 0; row < std::size_t{3} * 4 * 250; ++row) {
        const std::size_t l = row % 250;
        const float* before = x.data() + row * 24;
        const float* after = q1.data() + row * 24;
        const double turned =
            std::atan2(static_cast<double>(after[12]), static_cast<double>(after[0])) -
            std::atan2(static_cast<double>(before[12]), static_cast<double>(before[0]));
        const double off = std::remainder(turned - static_cast<double>(l), 2.0 * std::numbers::pi);
        ASSERT_NEAR(off, 0.0, 1e-3) << "row " << row;
    }
    for (const unsigned threads : {2U, 3U, 0U}) {
        same(attn::apply_norm(x, ln, 1), attn::apply_norm(x, ln, threads), "layer_norm");
        same(attn::apply_norm(x, rms, 1), attn::apply_norm(x, rms, threads), "rms_norm");
        attn::Norm head = rms;
        head.weight = attn::Vector::from_shape({24});
        head.weight.fill(1.5F);
        same(attn::apply_head_norm(x, head, 4, 1),
             attn::apply_head_norm(x, head, 4, threads),
             "head norm");
        attn::Tensor q = attn::Tensor::from_shape(q1.shape());
        attn::Tensor k = attn::Tensor::from_shape(k1.shape());
        std::copy_n(x.data(), q.size(), q.data());
        std::copy_n(x.data() + 1, k.size(), k.data());
        attn::apply_rope(q, k, rope, {}, threads);
        same(q1, q, "rope q");
        same(k1, k, "rope k");
        attn::Tensor3 act = x;
        attn::activate(act.data(), act.size(), attn::Activation::gelu_erf, threads);
        same(act1, act, "activation");
    }
}

} // namespace
