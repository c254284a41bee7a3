// Entry point of the `epoch` command-line tool.
#include <cstdio>

int main() {
  std::puts("epoch");
  return 0;
}
