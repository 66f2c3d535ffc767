// `ipurun --instances I`: mpirun on this host, each instance this very ipurun.
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <csignal>
#include <string>
#include <vector>

#include "cli/diagnostics.h"
#include "cli/exit_codes.h"
#include "cli/instances.h"

namespace ipu::cli {
namespace {

// mpirun's pid once it runs, and the first terminating signal ipurun received. A signal sent to
// ipurun alone (kill, a CI cancel, timeout) must end the whole job: ipurun hands it to mpirun,
// which ends the instances (Open MPI's mpirun forwards SIGTERM and SIGINT to them and exits), so
// nothing is left running or writes a checkpoint after it.
volatile std::sig_atomic_t g_mpirun = 0;
volatile std::sig_atomic_t g_signal = 0;

constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP};

void forward_to_mpirun(int signal) {
  if (g_signal == 0) g_signal = signal;
  if (g_mpirun > 0) ::kill(static_cast<pid_t>(g_mpirun), signal);
}

void set_handlers(void (*handler)(int)) {
  struct sigaction action = {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  for (int signal : kForwardedSignals)
    ::sigaction(signal, &action, nullptr);
}

} // namespace

int launch_instances(const char* tool, int instances, const std::vector<std::string>& arguments) {
  char self[PATH_MAX] = {};
  const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) {
    print_error(tool, "cannot find this ipurun's own path (/proc/self/exe) to start its instances");
    return kExitRuntimeError;
  }
  // One host: more instances than cores is the point (--oversubscribe), and each instance's TBB
  // threads may use every core (--bind-to none: Open MPI binds each to one core by default).
  std::vector<std::string> command = {"mpirun", "--oversubscribe", "--bind-to", "none"};
  if (::geteuid() == 0) command.emplace_back("--allow-run-as-root"); // containers and CI run as root
  command.insert(command.end(),
                 {"-np", std::to_string(instances), std::string(self, static_cast<size_t>(length))});
  command.insert(command.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  argv.reserve(command.size() + 1);
  for (std::string& word : command)
    argv.push_back(word.data());
  argv.push_back(nullptr);

  // Handlers before the fork, so no signal slips between it and them; exec resets them to the
  // defaults in mpirun.
  set_handlers(forward_to_mpirun);
  const pid_t child = ::fork();
  if (child < 0) {
    set_handlers(SIG_DFL);
    print_error(tool, "cannot start mpirun: fork failed");
    return kExitRuntimeError;
  }
  if (child == 0) {
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  g_mpirun = child;
  if (g_signal != 0) ::kill(child, g_signal); // it arrived before mpirun's pid was known
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
  }
  g_mpirun = 0;
  set_handlers(SIG_DFL);
  if (g_signal != 0) {
    // The job ended because ipurun was told to end: end as that signal says, silently (the
    // shell's 128 + N), as ipurun alone would have.
    ::raise(g_signal);
    return 128 + g_signal;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    print_error(tool, "cannot run mpirun: is Open MPI (openmpi-bin) installed?");
    return kExitRuntimeError;
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (code == kExitOk) return kExitOk;
  // An instance that failed printed why and ended the job with its exit code (MPI_Abort), which
  // mpirun returns; any other code means an instance ended without saying why, and mpirun's
  // report above names it.
  if (code > kExitOk && code < kExitInstanceFailed) return code;
  print_error(tool, "an instance of the job ended abnormally (mpirun exited with " + std::to_string(code) +
                        "; its report above names the instance); the others were stopped");
  return kExitInstanceFailed;
}

} // namespace ipu::cli
