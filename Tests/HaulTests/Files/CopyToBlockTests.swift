import CFileSystem
import Testing

/// `haul_copy_to_block` (streaming stores on x86-64) copies exactly the bytes asked for, whatever
/// the destination's alignment and the length: the head before a 16-byte boundary, the whole
/// 64-byte groups and the tail, and nothing around them.
@Suite struct CopyToBlockTests {
  @Test(arguments: [0, 1, 15, 16, 17, 63, 64, 65, 127, 1000, 16384, 16384 + 37])
  func copiesEveryLengthAtEveryAlignment(count: Int) {
    let source = (0..<(count + 64)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    for destinationOffset in [0, 1, 3, 8, 15, 16, 33] {
      for sourceOffset in [0, 1, 5, 16] {
        var destination = [UInt8](repeating: 0xEE, count: count + 128)
        destination.withUnsafeMutableBytes { to in
          source.withUnsafeBytes { from in
            haul_copy_to_block(to.baseAddress! + destinationOffset, from.baseAddress! + sourceOffset, count)
          }
        }
        let copied = destination[destinationOffset..<(destinationOffset + count)]
        #expect(Array(copied) == Array(source[sourceOffset..<(sourceOffset + count)]))
        #expect(destination[..<destinationOffset].allSatisfy { $0 == 0xEE }, "wrote before the destination")
        #expect(destination[(destinationOffset + count)...].allSatisfy { $0 == 0xEE }, "wrote past the end")
      }
    }
  }
}
