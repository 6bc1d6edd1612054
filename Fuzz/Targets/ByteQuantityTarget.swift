// Sizes and rates from the command line: never trap, never negative, plain numbers are exact.

import HaulCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzByteQuantity(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = fuzzBytes(data, size)
  let text = fuzzString(bytes)
  if let value = ByteQuantity.parse(text) {
    require(value >= 0, "negative \(value) from \(text.debugDescription)")
    if !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
      require(Int64(text) == value, "plain number \(text) read as \(value)")
    }
    require(ByteQuantity.parse(String(value)) == value, "\(value) does not parse back")
  }
  let number = fuzzInt64(bytes, at: 0)
  _ = ByteQuantity.format(number)
  _ = ByteQuantity.formatRate(Double(bitPattern: UInt64(bitPattern: number)))
  return 0
}
