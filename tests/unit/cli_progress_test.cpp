// attn::cli progress: the batch status line and the spinner's frames as text, and what the
// drawers send to a sink (a string here, stderr in attn).
#include "attn/cli/progress.hpp"

#include <chrono>
#include <gtest/gtest.h>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace attn::cli {
namespace {

TEST(ProgressLineText, CountsRateElapsedAndBar) {
    EXPECT_EQ(progress_line_text("attn batch", 1234, 2, 1.5, 35, 100),
              "\rattn batch: 1234 done, 2 failed, 822/s, 1.5 s [#######.............] 35%\033[K");
}

TEST(ProgressLineText, NoFailuresNoRateBeforeAnyTimeNoBarWhenTheSizeIsUnknown) {
    EXPECT_EQ(progress_line_text("b", 7, 0, 0.0, 10, 0), "\rb: 7 done, 0.0 s\033[K");
}

TEST(ProgressLineText, TheBarStopsFullWhenMoreWasReadThanTheSize) {
    EXPECT_EQ(progress_line_text("b", 10, 0, 2.0, 500, 100),
              "\rb: 10 done, 5/s, 2.0 s [####################] 100%\033[K");
}

TEST(LayerProgressText, RateIsAWholeForwardsAndTimeLeftFollowsThePace) {
    // 4 of 16 layers of 512 tokens in 2 s: 0.5 s a layer, 8 s a forward (64 tokens/s), 6 s
    // left for the other 12.
    EXPECT_EQ(layer_progress_text(4, 16, 512, 2.0),
              "layer 4 of 16, 512 tokens, 64 tokens/s, 2.0 s, about 6.0 s left");
    EXPECT_EQ(layer_progress_text(16, 16, 512, 8.0),
              "layer 16 of 16, 512 tokens, 64 tokens/s, 8.0 s");
    EXPECT_EQ(layer_progress_text(1, 16, 512, 0.0), "layer 1 of 16, 512 tokens");
}

TEST(LayerProgress, ForcedLinesGoToTheSinkOnePerLayer) {
    std::string drawn;
    LayerProgress progress(nullptr, true, 8, [&drawn](std::string_view s) { drawn += s; });
    progress(1, 2);
    progress(2, 2);
    EXPECT_EQ(drawn.rfind("attn: layer 1 of 2, 8 tokens", 0), 0U) << drawn;
    EXPECT_NE(drawn.find("\nattn: layer 2 of 2, 8 tokens"), std::string::npos) << drawn;
    EXPECT_EQ(drawn.back(), '\n');
}

TEST(SpinnerText, FramesCycle) {
    EXPECT_EQ(spinner_text("computing", 0, 2.34), "\rattn: computing | 2.3 s\033[K");
    EXPECT_EQ(spinner_text("computing", 3, 0.0), "\rattn: computing \\ 0.0 s\033[K");
    EXPECT_EQ(spinner_text("x", 5, 1.0), "\rattn: x / 1.0 s\033[K");
}

TEST(ProgressLine, AQuickRunDrawsNothingAndClearsNothing) {
    std::string drawn;
    {
        ProgressLine line(true, "b", 0, [&](std::string_view s) { drawn += s; });
        line.update(3, 0, 10); // before the first second
        line.clear();
    }
    EXPECT_EQ(drawn, "");
}

TEST(DelayedSpinner, DrawsIntoItsSinkAndErasesWhenStopped) {
    std::mutex mutex;
    std::vector<std::string> drawn;
    const auto count = [&] {
        const std::lock_guard<std::mutex> lock(mutex);
        return drawn.size();
    };
    DelayedSpinner spinner(true, "working", std::chrono::milliseconds(0), [&](std::string_view s) {
        const std::lock_guard<std::mutex> lock(mutex);
        drawn.emplace_back(s);
    });
    // No delay: the ticker draws its first frame at once (waited for, not timed).
    while (count() == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    spinner.stop(); // joins the ticker
    ASSERT_GE(drawn.size(), 2U);
    EXPECT_EQ(drawn.front().rfind("\rattn: working | 0.", 0), 0U) << drawn.front();
    EXPECT_EQ(drawn.back(), kEraseLine);
}

TEST(DelayedSpinner, DisabledDrawsNothing) {
    std::string drawn;
    {
        DelayedSpinner spinner(
            false, "x", std::chrono::milliseconds(0), [&](std::string_view s) { drawn += s; });
    }
    EXPECT_EQ(drawn, "");
}

} // namespace
} // namespace attn::cli
