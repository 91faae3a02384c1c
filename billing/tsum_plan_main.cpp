// tsum-plan: the offline planner on its own (same as `tsumd plan`). See billing/plan_cli.h.
#include <iostream>
#include <string>
#include <vector>

#include "billing/plan_cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return tsum::billing::plan_main(args, std::cout, std::cerr);
}
