// Shared by every harness: compiled into each fuzz binary next to the Haul files it needs.

/// Stops the fuzzer with a message when an invariant breaks; libFuzzer saves the input.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
  if !condition { fatalError("invariant broken: \(message())") }
}

/// The input as bytes; headers reach Haul as Swift strings, so invalid UTF-8 is repaired the
/// way `String(decoding:as:)` does it in the transport.
func fuzzBytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
  guard let data, size > 0 else { return [] }
  return Array(UnsafeBufferPointer(start: data, count: size))
}

func fuzzString(_ bytes: some Collection<UInt8>) -> String {
  String(decoding: bytes, as: UTF8.self)
}

/// Reads the input as Unicode scalars, three bytes each (so bidi, zero-width and other
/// scalars far from ASCII are as easy to reach as letters); surrogates become U+FFFD.
func fuzzScalars(_ bytes: [UInt8]) -> String {
  var scalars = String.UnicodeScalarView()
  var index = 0
  while index + 2 < bytes.count {
    let value =
      (UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])) % 0x11_0000
    scalars.append(Unicode.Scalar(value) ?? "\u{FFFD}")
    index += 3
  }
  return String(scalars)
}

/// An Int64 from up to eight bytes at `offset` (missing bytes are zero).
func fuzzInt64(_ bytes: [UInt8], at offset: Int) -> Int64 {
  var value: UInt64 = 0
  for index in offset..<(offset + 8) {
    value = value << 8 | UInt64(index < bytes.count ? bytes[index] : 0)
  }
  return Int64(bitPattern: value)
}
