#pragma once
/// OpenAI's error object, as every HTTP reply that refuses or fails carries it, and the mapping
/// from lorafleet's serve_errc (a router's or worker's refusal) to its HTTP status and type. Pure
/// C++; openai_response.hpp writes it as a JSON body (error_body).

#include <string>

#include "core/serve_errc.hpp"

namespace lf::gateway {

/// An error as OpenAI's API reports it: HTTP status and the `error` object's fields.
struct api_error {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  ///< the field at fault; empty => null
  std::string code;   ///< lorafleet's serve_errc name, or empty => null
};

/// The api_error for a serve_errc from the router or a worker (status and type by code; for
/// invalid_request, `param` is the field the message starts with, `adapter` named `model`).
api_error to_api_error(serve_errc code, std::string message);

} // namespace lf::gateway
