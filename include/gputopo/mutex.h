// Mutex and MutexLock: std::mutex with clang's thread safety annotations, so that "this member
// is guarded by that mutex" is a contract the compiler checks, not a comment.
//
// Members declared GPUTOPO_GUARDED_BY(mutex_) may be touched only while a MutexLock on mutex_
// is held; functions declared GPUTOPO_REQUIRES(mutex_) only be called so. GCC, which builds
// gputopo, ignores the annotations; `./run test` runs clang's analysis (-Wthread-safety, through
// clang-tidy) over the files that use them, and fails on a violation.
//
// Condition variables: wait through the lock (MutexLock::Wait), in a loop written in the
// function itself, `while (!ready_) lock.Wait(changed_);`: a predicate lambda is a function of
// its own to the analysis, which would not know the mutex is held there.
//
// Thread safety: Mutex is a mutex; a MutexLock belongs to the thread that made it.
#ifndef GPUTOPO_MUTEX_H_
#define GPUTOPO_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define GPUTOPO_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define GPUTOPO_THREAD_ANNOTATION(x)
#endif

#define GPUTOPO_CAPABILITY(x) GPUTOPO_THREAD_ANNOTATION(capability(x))
#define GPUTOPO_SCOPED_CAPABILITY GPUTOPO_THREAD_ANNOTATION(scoped_lockable)
#define GPUTOPO_GUARDED_BY(x) GPUTOPO_THREAD_ANNOTATION(guarded_by(x))
#define GPUTOPO_PT_GUARDED_BY(x) GPUTOPO_THREAD_ANNOTATION(pt_guarded_by(x))
#define GPUTOPO_REQUIRES(...) GPUTOPO_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define GPUTOPO_EXCLUDES(...) GPUTOPO_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define GPUTOPO_ACQUIRE(...) GPUTOPO_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define GPUTOPO_RELEASE(...) GPUTOPO_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define GPUTOPO_TRY_ACQUIRE(...) GPUTOPO_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))

namespace gputopo {

class GPUTOPO_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  // For a caller that must not wait: `if (mu.TryLock()) { ...; mu.Unlock(); }`. Everything
  // else holds the mutex through a MutexLock.
  bool TryLock() GPUTOPO_TRY_ACQUIRE(true) { return mutex_.try_lock(); }
  void Unlock() GPUTOPO_RELEASE() { mutex_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mutex_;
};

// Holds `mutex` from construction to destruction, except between Unlock and Lock.
class GPUTOPO_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) GPUTOPO_ACQUIRE(mutex) : lock_(mutex.mutex_) {}
  ~MutexLock() GPUTOPO_RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() GPUTOPO_RELEASE() { lock_.unlock(); }
  void Lock() GPUTOPO_ACQUIRE() { lock_.lock(); }

  // Releases the mutex while waiting for `cv` (or a spurious wake-up), holds it again on return.
  void Wait(std::condition_variable& cv) { cv.wait(lock_); }
  // The same, returning no later than `deadline` has passed (std::cv_status::timeout then).
  template <typename Clock, typename Duration>
  std::cv_status WaitUntil(std::condition_variable& cv,
                           const std::chrono::time_point<Clock, Duration>& deadline) {
    return cv.wait_until(lock_, deadline);
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace gputopo

#endif  // GPUTOPO_MUTEX_H_
