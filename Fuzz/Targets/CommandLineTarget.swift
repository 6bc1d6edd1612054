// `haul` argument parsing: never traps, and every accepted command line is within its limits —
// above all, no header that could split the request (CR, LF, NUL) or an invalid header name.
//
// The input is split at NUL bytes into arguments (a real argv cannot contain NUL either).
// fuzz-source: Sources/HaulCLI/CommandLineOptions.swift
// fuzz-source: Sources/HaulCLI/CommandLineOptions+Network.swift
// fuzz-source: Sources/HaulCLI/CommandLineOptions+RefreshCommand.swift
// fuzz-source: Sources/HaulCLI/CommandLineOptions+Habits.swift

import HaulCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCommandLine(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = fuzzBytes(data, size)
  let arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).map { fuzzString($0) }
  let request: CommandRequest
  do {
    request = try CommandLineOptions.parse(arguments)
  } catch {
    require(!error.message.isEmpty, "usage error without a message for \(arguments)")
    return 0
  }
  guard case .download(let options) = request else { return 0 }
  let context = "\(arguments)"
  require(!options.urls.isEmpty || options.inputFile != nil, "no URL from \(context)")
  require(!options.urls.contains(""), "empty URL from \(context)")
  require(options.output == nil || options.directory == nil, "--output with --dir from \(context)")
  require(options.output == nil || !options.isBatch, "--output with several URLs from \(context)")
  if let parallel = options.parallel {
    require((1...64).contains(parallel), "parallel \(parallel) from \(context)")
  }
  if let connections = options.connections {
    require((1...64).contains(connections), "connections \(connections) from \(context)")
  }
  if let rate = options.rateLimit { require(rate > 0, "rate \(rate) from \(context)") }
  if let retries = options.retries { require(retries >= 0, "retries \(retries) from \(context)") }
  if let timeout = options.timeout {
    require(timeout.isFinite && timeout > 0, "timeout \(timeout) from \(context)")
  }
  for header in options.headers {
    require(
      !header.name.isEmpty && header.name.utf8.allSatisfy(isTokenByte),
      "header name \(header.name.debugDescription)")
    require(
      !header.value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 },
      "header value \(header.value.debugDescription)")
  }
  let library = options.downloadOptions
  require(library.verifyTLS == !options.insecure, "verifyTLS does not follow --insecure")
  return 0
}

private func isTokenByte(_ byte: UInt8) -> Bool {
  (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
    || "!#$%&'*+-.^_`|~".utf8.contains(byte)
}
