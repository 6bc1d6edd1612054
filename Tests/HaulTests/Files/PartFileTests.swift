import Foundation
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
    // Large enough to open the direct descriptor, so that the reads use it too.
    try Self.writeDirect(Array(body), to: part)
    let buffer = UnsafeMutableRawBufferPointer.allocate(
      byteCount: 64 << 10, alignment: PartFile.directAlignment)
    defer { buffer.deallocate() }
    var read: [UInt8] = []
    let end = try part.read(from: Int64(from), to: Int64(to), using: buffer) { read += $0 }
    #expect(end == Int64(to))
    #expect(read == Array(body[from..<to]))
  }

  /// `bytes` at 0: the aligned prefix with `writeDirect` (from aligned memory), the rest not.
  private static func writeDirect(_ bytes: [UInt8], at offset: Int64 = 0, to part: PartFile) throws {
    let aligned = bytes.count / PartFile.directAlignment * PartFile.directAlignment
    let block = UnsafeMutableRawBufferPointer.allocate(
      byteCount: aligned, alignment: PartFile.directAlignment)
    defer { block.deallocate() }
    block.copyBytes(from: bytes[0..<aligned])
    try part.writeDirect(UnsafeRawBufferPointer(block), at: offset)
    try bytes[aligned...].withUnsafeBytes { try part.write($0, at: offset + Int64(aligned)) }
  }

  /// This process's descriptors open on `path`.
  private static func descriptors(on path: String) throws -> Int {
    try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count {
      (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == path
    }
  }

  /// A small file's block goes through the page cache: no second descriptor is opened for it;
  /// the first block of `directMinimum` bytes or more opens it.
  @Test func onlyALargeBlockOpensTheFileForDirectIO() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("f.part").path
    let part = try PartFile(path: path)
    let small = TestResource.random(size: 100 * 1024, seed: 92)
    try Self.writeDirect(small, to: part)
    #expect(try Self.descriptors(on: path) == 1)
    #expect(part.writesDirectly)
    let large = TestResource.random(size: PartFile.directMinimum, seed: 93)
    try Self.writeDirect(large, at: Int64(small.count), to: part)
    // (A file system without direct I/O refuses the open: the page cache, one descriptor.)
    #expect(try Self.descriptors(on: path) == (part.writesDirectly ? 2 : 1))
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(small + large))
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
