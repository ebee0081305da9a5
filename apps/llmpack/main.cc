#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("llmpack %s\n", LLMPACK_VERSION);
    return 0;
  }
  std::fprintf(stderr, "llmpack: no subcommand yet\n");
  return 2;
}
