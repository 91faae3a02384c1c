// The encodings of http/codec.h by their short names in the AWS code (SigV4, the Query API, the fake EC2).
#pragma once

#include "providers/http/codec.h"

namespace tsum::providers::aws {

using http::base64_decode;
using http::base64_encode;
using http::Fields;
using http::form_encode;
using http::gzip_compress;
using http::gzip_decompress;
using http::hex;
using http::hmac_sha256;
using http::parse_query;
using http::percent_decode;
using http::sha256_hex;
using http::uri_encode;

}  // namespace tsum::providers::aws
