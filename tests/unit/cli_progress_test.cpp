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
