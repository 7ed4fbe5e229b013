//===- RankThreads.cpp - one thread per rank, started all or none ---------===//

#include "RankThreads.h"
#include "Routing.h"

#include "llvm/Support/FormatVariadic.h"

#include <condition_variable>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

using namespace llvm;

namespace moecomm {
namespace run {

Error runOnRankThreads(int ranks, function_ref<void(int)> body) {
  enum class Gate { Closed, Open, Cancelled };
  std::mutex mutex;
  std::condition_variable cv;
  Gate gate = Gate::Closed;
  auto setGate = [&](Gate g) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      gate = g;
    }
    cv.notify_all();
  };

  std::vector<std::thread> threads;
  std::string why;
  try {
    threads.reserve(ranks);
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        {
          std::unique_lock<std::mutex> lock(mutex);
          cv.wait(lock, [&] { return gate != Gate::Closed; });
          if (gate == Gate::Cancelled)
            return;
        }
        body(r);
      });
    }
  } catch (const std::system_error &e) {
    why = e.what();
  } catch (const std::bad_alloc &) {
    why = "out of memory";
  }
  const size_t started = threads.size();
  setGate(started == static_cast<size_t>(ranks) ? Gate::Open : Gate::Cancelled);
  for (std::thread &t : threads)
    t.join();
  if (started != static_cast<size_t>(ranks))
    return systemError(formatv("cannot start the thread of rank {0} of {1} "
                               "(threads backend): {2}",
                               started, ranks, why));
  return Error::success();
}

} // namespace run
} // namespace moecomm
