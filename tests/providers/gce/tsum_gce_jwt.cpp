// tsum-gce-jwt: the JWT half of the GCE adapter on the command line, for the PyJWT cross-check
// (jwt_pyjwt_check.py).
//   tsum-gce-jwt sign KEY_FILE AUDIENCE SCOPE NOW_S   prints the assertion for the service account key file
//   tsum-gce-jwt verify KEY_PEM_FILE                   reads a JWT on stdin; prints its claims, or exits 1
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "providers/gce/jwt.h"

using namespace tsum::providers::gce;

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "sign" && argc == 6) {
    auto sa = load_service_account(argv[2]);
    if (!sa) return std::cerr << sa.error().detail << "\n", 2;
    auto jwt = make_assertion(*sa, argv[4], argv[3], std::stoll(argv[5]));
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
    auto verified = verify_jwt(token, key.str());
    if (!verified) return std::cout << "refused: " << verified.error().detail << "\n", 1;
    std::cout << verified->claims.dump() << "\n";
    return 0;
  }
  std::cerr << "usage: tsum-gce-jwt sign KEY_FILE AUDIENCE SCOPE NOW_S | verify KEY_PEM_FILE < jwt\n";
  return 2;
}
