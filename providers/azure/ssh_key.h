// A throwaway OpenSSH public key: Azure's Linux VMs want an SSH key or a password, tsum's agent needs
// neither, so by default the VM gets the public half of a fresh RSA key whose private half is dropped at
// once. Password login stays disabled and nobody can log in.
#pragma once

#include <string>

#include "common/result.h"

namespace tsum::providers::azure {

// "ssh-rsa <base64 of the RFC 4253 public key blob> tsum-throwaway" for a fresh 3072-bit RSA key.
Result<std::string> throwaway_ssh_public_key();

}  // namespace tsum::providers::azure
