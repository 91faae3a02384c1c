// tsum-yandex-jwt: the PS256 JWT half of the Yandex adapter on the command line, for the PyJWT cross-check
// (ps256_pyjwt_check.py).
//   tsum-yandex-jwt sign KEY_FILE AUDIENCE NOW_S   prints the JWT for the authorized key file
//   tsum-yandex-jwt verify KEY_PEM_FILE            reads a JWT on stdin; prints its header and claims, or exits 1
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "providers/yandex/ps256_jwt.h"

using namespace tsum::providers::yandex;

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "sign" && argc == 5) {
    auto key = load_authorized_key(argv[2]);
    if (!key) return std::cerr << key.error().detail << "\n", 2;
    auto jwt = make_ps256_jwt(*key, argv[3], std::stoll(argv[4]));
    if (!jwt) return std::cerr << jwt.error().detail << "\n", 2;
    std::cout << *jwt << "\n";
    return 0;
  }
  if (mode == "verify" && argc == 3) {
    std::ifstream key_file(argv[2]);
    std::stringstream key, jwt;
    key << key_file.rdbuf();
    jwt << std::cin.rdbuf();
    std::string token = jwt.str();
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
    auto verified = verify_ps256_jwt(token, key.str());
    if (!verified) return std::cout << "refused: " << verified.error().detail << "\n", 1;
    std::cout << nlohmann::json{{"header", verified->header}, {"claims", verified->claims}}.dump() << "\n";
    return 0;
  }
  std::cerr << "usage: tsum-yandex-jwt sign KEY_FILE AUDIENCE NOW_S | verify KEY_PEM_FILE < jwt\n";
  return 2;
}
