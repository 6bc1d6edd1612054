import HaulTestSupport
import Testing

@testable import Haul

/// Reading back for the hasher: any range, in pieces, with or without direct I/O.
@Suite struct PartFileTests {
  @Test(arguments: [
    (0, 300_000, true), (1_234, 299_999, true), (5_000, 9_000, true), (1_234, 299_999, false),
  ])
  func readsAnyRangeInPieces(from: Int, to: Int, directIO: Bool) throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path, directIO: directIO)
    let body = TestResource.random(size: 300_000, seed: 90)
    try body.withUnsafeBytes { try part.write($0, at: 0) }
    let buffer = UnsafeMutableRawBufferPointer.allocate(
      byteCount: 64 << 10, alignment: PartFile.directAlignment)
    defer { buffer.deallocate() }
    var read: [UInt8] = []
    let end = try part.read(from: Int64(from), to: Int64(to), using: buffer) { read += $0 }
    #expect(end == Int64(to))
    #expect(read == Array(body[from..<to]))
  }

  @Test func stopsWhereTheFileEnds() throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path)
    let body = TestResource.random(size: 10_000, seed: 91)
    try body.withUnsafeBytes { try part.write($0, at: 0) }
    let buffer = UnsafeMutableRawBufferPointer.allocate(
      byteCount: 16 << 10, alignment: PartFile.directAlignment)
    defer { buffer.deallocate() }
    var read: [UInt8] = []
    let end = try part.read(from: 100, to: 50_000, using: buffer) { read += $0 }
    #expect(end == 10_000)
    #expect(read == Array(body[100...]))
  }
}
