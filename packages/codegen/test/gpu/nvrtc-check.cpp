#include <nvrtc.h>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
int main(int argc, char** argv) {
  std::ifstream f(argv[1]); std::stringstream ss; ss << f.rdbuf(); std::string src = ss.str();
  nvrtcProgram p; nvrtcCreateProgram(&p, src.c_str(), "unit.cu", 0, nullptr, nullptr);
  const char* opts[] = {"--gpu-architecture=sm_90", "-default-device"};
  nvrtcResult r = nvrtcCompileProgram(p, 1, opts);
  size_t n; nvrtcGetProgramLogSize(p, &n); std::string log(n, '\0'); nvrtcGetProgramLog(p, &log[0]);
  printf("%s\n%s\n", nvrtcGetErrorString(r), log.c_str());
  return r == NVRTC_SUCCESS ? 0 : 1;
}
