// The `plan` command line: `tsumd plan ...` and the standalone `tsum-plan` call plan_main with the arguments
// that follow the command name.
//
//   --from-csv FILE          measured runs (see plan_csv.h); required
//   --objective O            cost (default), time, cost_under_deadline, budget
//   --deadline S             seconds; required by cost_under_deadline
//   --confidence P           P(t_sum <= deadline) to require, default 0.9
//   --budget B               required by budget, in the CSV's currency
//   --billing RULE           one rule for every config (a rule name or step:S,min:M); default: each provider's
//   --rules FILE             extra billing rules (rule_book.h format), usable by --billing and as provider rules
//   --repetitions N          default 1
//   --packing P              fresh, packed or best (default) when N > 1
//   --epochs N               epochs in a full run (for free-epoch counts and partial runs), default 1
//   --images-per-epoch N     for rows with images_done
//   --samples N              Monte Carlo draws per config, default 2520
//   --seed N                 default 1
//   --json                   print the plan as JSON instead of a table
//
// Exit status: 0 on success, 1 when the input cannot be planned (bad CSV, unknown rule...), 2 on a usage error.
// Messages go to err and name what is wrong.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tsum::billing {

int plan_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace tsum::billing
