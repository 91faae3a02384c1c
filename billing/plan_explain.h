// One-line human reasons for a ranked plan: why the winner beats the runner-up ("per_hour: both bill 1 h;
// local-1c is half the price"), and why each other entry loses to the winner.
#pragma once

#include <string>

#include "billing/planner.h"

namespace tsum::billing {

// Fills reason of every entry of plan.ranked.
void explain_plan(Plan& plan);

// "0.0425 USD", "12.5 RUB": a price with enough digits to tell close ones apart.
std::string format_money(double amount, const std::string& currency);

}  // namespace tsum::billing
