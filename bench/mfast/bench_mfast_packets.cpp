// mFAST's generated decoder (fast_decoder_v2) over a len32le file of packets, each a header of
// H bytes and then messages, the dictionaries reset at each packet's start (as fastfeed's
// simulator encodes them): the reference to race `fastfeed bench decode` against on the
// simulator's data. Built by build.sh over the mFAST of ../../../shared/reference/mfast.
//   bench_mfast_packets -f FILE -h HEADER_BYTES -n PASSES
// Prints min_ns/msg=... median_ns/msg=... msgs=... checksum=... like bench_mfast.
#include <mfast.h>
#include <mfast/coder/fast_decoder_v2.h>
#include "simple.h"
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

static std::vector<char> slurp(const char* path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  std::string t = s.str();
  return std::vector<char>(t.begin(), t.end());
}

int main(int argc, char** argv) {
  const char* file = nullptr;
  int header = 4, passes = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "-f")) file = argv[i + 1];
    else if (!std::strcmp(argv[i], "-h")) header = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "-n")) passes = std::atoi(argv[i + 1]);
  }
  if (!file) { std::fprintf(stderr, "usage: bench_mfast_packets -f FILE [-h HEADER] [-n PASSES]\n"); return 2; }
  std::vector<char> data = slurp(file);
  mfast::fast_decoder_v2<0> decoder(simple::description());
  std::vector<double> ns;
  unsigned long long sum = 0, msgs = 0;
  for (int p = 0; p < passes; ++p) {
    msgs = 0;
    auto t0 = std::chrono::steady_clock::now();
    const char* rec = data.data();
    const char* end = data.data() + data.size();
    while (rec + 4 <= end) {
      uint32_t len;
      std::memcpy(&len, rec, 4);
      const char* first = rec + 4 + header;
      const char* last = rec + 4 + len;
      bool reset = true;
      while (first < last) {
        mfast::message_cref m = decoder.decode(first, last, reset);
        reset = false;
        sum += m.id();
        ++msgs;
      }
      rec = last;
    }
    auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / msgs);
  }
  std::sort(ns.begin(), ns.end());
  std::printf("min_ns/msg=%.1f median_ns/msg=%.1f msgs=%llu passes=%d checksum=%llu\n", ns.front(),
              ns[ns.size() / 2], msgs, passes, sum);
  return 0;
}
