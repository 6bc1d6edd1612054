// The manager's helper process: the child that crash trials kill, the holder whose pid a second
// opener must be told, and the measurements of issue 13 (for the benchmarks package).
//
//   HaulManagerHarness child CATALOG DIRECTORY LIMIT URL…   add the URLs to an empty catalog, run until idle
//   HaulManagerHarness hold CATALOG                          own the catalog until killed
//   HaulManagerHarness read CATALOG                          what `haul ls` does (DownloadManager.read), timed
//   HaulManagerHarness list CATALOG                          a manager opened at launch, listing, timed
//   HaulManagerHarness bench [COUNT…]                        add COUNT URLs in one call, then list them
//                                                            (default 1000 10000; one JSON line per count)
import Foundation
import Haul

/// One line on stdout, unbuffered (a parent reads it while this process runs, or after a kill).
func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("HaulManagerHarness: \(message)\n".utf8))
  exit(2)
}

/// Resident and peak resident memory of this process, MiB (Linux /proc).
func memory() -> (rss: Double, peak: Double) {
  let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
  func field(_ name: String) -> Double {
    let line = status.split(separator: "\n").first { $0.hasPrefix(name + ":") } ?? ""
    return (Double(line.split(separator: " ").dropFirst().first ?? "") ?? 0) / 1024
  }
  return (field("VmRSS"), field("VmHWM"))
}

func seconds(_ duration: Duration) -> Double {
  Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func json(_ fields: [(String, Any)]) -> String {
  "{"
    + fields.map { key, value in
      let text = (value as? Double).map { String(format: "%.4f", $0) } ?? "\(value)"
      return "\"\(key)\":\(value is String ? "\"\(text)\"" : text)"
    }.joined(separator: ",") + "}"
}

func child(_ arguments: [String]) async throws {
  guard arguments.count >= 3, let limit = Int(arguments[2]) else {
    fail("usage: child CATALOG DIRECTORY LIMIT URL…")
  }
  var configuration = DownloadManager.Configuration()
  configuration.maxConcurrentDownloads = limit
  let manager = try DownloadManager(catalog: URL(fileURLWithPath: arguments[0]), configuration: configuration)
  if manager.downloads().isEmpty, arguments.count > 3 {
    let directory = URL(fileURLWithPath: arguments[1])
    let ids = try await manager.add(
      arguments[3...].map { DownloadRequest(url: $0, to: .directory(directory)) })
    say("added " + ids.map(\.description).joined(separator: " "))
  }
  await manager.waitUntilIdle()
  await manager.close()
  say("idle")
}

func hold(_ arguments: [String]) throws -> Never {
  guard arguments.count == 1 else { fail("usage: hold CATALOG") }
  var configuration = DownloadManager.Configuration()
  configuration.launch = .hold
  let manager = try DownloadManager(catalog: URL(fileURLWithPath: arguments[0]), configuration: configuration)
  say("holding \(manager.downloads().count)")
  while true { sleep(60) }
}

/// Opens the catalog as `haul ls` will (nothing runs), lists every download, closes.
func list(_ catalog: URL) async throws -> [(String, Any)] {
  let before = memory()
  let clock = ContinuousClock()
  let start = clock.now
  var configuration = DownloadManager.Configuration()
  configuration.launch = .hold
  let manager = try DownloadManager(catalog: catalog, configuration: configuration)
  let opened = clock.now
  let afterOpen = memory()
  let downloads = manager.downloads()
  let listed = clock.now
  _ = manager.downloads()
  let again = clock.now
  await manager.close()
  let after = memory()
  return [
    ("downloads", downloads.count), ("open_seconds", seconds(opened - start)),
    ("list_seconds", seconds(listed - opened)), ("open_and_list_seconds", seconds(listed - start)),
    ("list_again_seconds", seconds(again - listed)), ("rss_before_mib", before.rss),
    ("rss_opened_mib", afterOpen.rss), ("rss_after_mib", after.rss),
    ("peak_rss_mib", after.peak),
  ]
}

/// Adds `count` queued downloads (into the catalog's directory; nothing runs) in one call.
/// - Returns: the seconds the call took.
func fill(_ catalog: URL, count: Int) async throws -> Double {
  var configuration = DownloadManager.Configuration()
  configuration.launch = .hold
  let directory = catalog.deletingLastPathComponent()
  let requests = (0..<count).map {
    DownloadRequest(url: "http://127.0.0.1:9/files/file-\($0).bin", to: .directory(directory))
  }
  let manager = try DownloadManager(catalog: catalog, configuration: configuration)
  let clock = ContinuousClock()
  let start = clock.now
  _ = try await manager.add(requests)
  let added = clock.now - start
  await manager.close()
  return seconds(added)
}

/// Streams the catalog as `haul ls` does: `DownloadManager.read`, nothing kept but counts.
func read(_ catalog: URL) throws -> [(String, Any)] {
  let before = memory()
  let clock = ContinuousClock()
  let start = clock.now
  var count = 0
  var bytes: Int64 = 0
  try DownloadManager.read(catalog: catalog) { download in
    count += 1
    bytes += download.bytes
  }
  let done = clock.now
  let after = memory()
  return [
    ("downloads", count), ("read_seconds", seconds(done - start)), ("read_rss_before_mib", before.rss),
    ("read_rss_after_mib", after.rss), ("read_peak_rss_mib", after.peak),
  ]
}

func bench(_ counts: [Int]) async throws {
  for count in counts {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
      "haul-manager-bench-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let catalog = directory.appendingPathComponent("catalog.sqlite")
    let added = try await fill(catalog, count: count)
    let size = (try? FileManager.default.attributesOfItem(atPath: catalog.path)[.size] as? Int) ?? 0
    let streamed = try read(catalog)
    let listing = try await list(catalog)
    let fields: [(String, Any)] = [
      ("benchmark", "manager"), ("count", count), ("add_seconds", added), ("catalog_bytes", size),
    ]
    say(json(fields + streamed.dropFirst() + listing))
  }
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
  switch arguments.first {
  case "child": try await child(Array(arguments.dropFirst()))
  case "hold": try hold(Array(arguments.dropFirst()))
  case "fill":
    guard arguments.count == 3, let count = Int(arguments[2]), count > 0 else {
      fail("usage: fill CATALOG COUNT")
    }
    let added = try await fill(URL(fileURLWithPath: arguments[1]), count: count)
    say(json([("benchmark", "manager-fill"), ("count", count), ("add_seconds", added)]))
  case "read":
    guard arguments.count == 2 else { fail("usage: read CATALOG") }
    say(json([("benchmark", "manager-read")] + (try read(URL(fileURLWithPath: arguments[1])))))
  case "list":
    guard arguments.count == 2 else { fail("usage: list CATALOG") }
    say(json([("benchmark", "manager-list")] + (try await list(URL(fileURLWithPath: arguments[1])))))
  case "bench":
    let counts = arguments.dropFirst().map { Int($0) ?? 0 }.filter { $0 > 0 }
    try await bench(counts.isEmpty ? [1000, 10000] : counts)
  default:
    fail("usage: child|hold|fill|read|list|bench …")
  }
} catch {
  fail("\(error)")
}
