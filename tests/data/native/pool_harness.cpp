// A host program around the native loops' thread pool (``_PTHREAD`` of
// python3.11libs/pbdcloth/backends/warp/selfcollision_native.py, which tests/test_warp.py
// pastes in place of the marker line below). Its pthread functions stand in for the C
// library's: each checks that the mutex or condition variable it is given went through
// pthread_mutex_init or pthread_cond_init first, as POSIX asks (exit 3 if not), then calls the
// C library's. main() runs the pool three times on two threads, 40 blocks each, a block
// sleeping 0.2 ms, and exits 4 unless every block ran once and the worker thread ran some in
// the first run.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static void* seen[16];
static int seen_n = 0;
static void note(void* p) { seen[__atomic_fetch_add(&seen_n, 1, __ATOMIC_SEQ_CST)] = p; }
static void check(void* p, const char* what) {
  for (int k = 0; k < __atomic_load_n(&seen_n, __ATOMIC_SEQ_CST); ++k) if (seen[k] == p) return;
  printf("%s of an object that was never initialized\n", what);
  fflush(stdout);
  _exit(3);
}
template <class F> static F real(const char* name) { return (F)dlsym(RTLD_NEXT, name); }
extern "C" int pthread_mutex_init(void* m, const void* a) {
  note(m); return real<int (*)(void*, const void*)>("pthread_mutex_init")(m, a); }
extern "C" int pthread_cond_init(void* c, const void* a) {
  note(c); return real<int (*)(void*, const void*)>("pthread_cond_init")(c, a); }
extern "C" int pthread_mutex_lock(void* m) {
  check(m, "pthread_mutex_lock"); return real<int (*)(void*)>("pthread_mutex_lock")(m); }
extern "C" int pthread_mutex_unlock(void* m) {
  check(m, "pthread_mutex_unlock"); return real<int (*)(void*)>("pthread_mutex_unlock")(m); }
extern "C" int pthread_cond_wait(void* c, void* m) {
  check(c, "pthread_cond_wait"); check(m, "pthread_cond_wait");
  return real<int (*)(void*, void*)>("pthread_cond_wait")(c, m); }
extern "C" int pthread_cond_broadcast(void* c) {
  check(c, "pthread_cond_broadcast"); return real<int (*)(void*)>("pthread_cond_broadcast")(c); }
__POOL__
struct Job { int* next; int n; int index; int blocks; };
static void* work(void* arg) {
  Job* J = (Job*)arg;
  while (__atomic_fetch_add(J->next, 1, __ATOMIC_RELAXED) < J->n) {
    J->blocks += 1;
    usleep(200);
  }
  return nullptr;
}
int main() {
  int total = 0, others = 0;
  for (int run = 0; run < 3; ++run) {
    Job jobs[2] = {{nullptr, 40, 0, 0}, {nullptr, 40, 1, 0}};
    pbd_team_run(work, (char*)jobs, (int)sizeof(Job), 2, 40,
                 [](void* job, int* next) { ((Job*)job)->next = next; });
    if (run == 0) others = jobs[1].blocks;
    total += jobs[0].blocks + jobs[1].blocks;
  }
  printf("blocks %d, the worker's in the first run %d\n", total, others);
  return total == 120 && others > 0 ? 0 : 4;
}
