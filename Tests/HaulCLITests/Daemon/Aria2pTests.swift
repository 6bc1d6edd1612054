import Foundation
import HaulRPC
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `haul daemon` driven by aria2p, a real aria2 client (its Python API over HTTP, its
/// notifications over WebSocket, and its command line), as its users drive aria2c.
@Suite(
  "haul daemon with aria2p",
  .enabled(Aria2pEnvironment.skipReason) { await Aria2pEnvironment.shared.venv() != nil })
struct Aria2pTests {
  @Test func addPauseResumeCompleteNotifyAndTheCommandLine() async throws {
    let venv = try #require(await Aria2pEnvironment.shared.venv())
    let directory = try TemporaryDirectory()
    let server = try TestServer()
    defer { server.stop() }
    let quick = TestResource.random(size: 200_000, seed: 71)
    let slow = TestResource.random(size: 1 << 20, seed: 72)
    server.setResource("/quick.bin", TestResource(body: quick, etag: "\"71\""))
    server.setResource(
      "/slow.bin",
      TestResource(body: slow, etag: "\"72\"", faults: TestFaults(stallAfterBytes: 256 << 10, stallTimes: 1)))
    server.setResource("/cli.bin", TestResource(body: quick, etag: "\"73\""))
    let daemon = try await DaemonProcess.start(in: directory)
    let script = directory.file("drive.py")
    try Self.driver.write(to: script, atomically: true, encoding: .utf8)
    let child = try ChildProcess.start(
      URL(fileURLWithPath: venv + "/bin/python"),
      [
        script.path, String(daemon.port), DaemonProcess.secret, server.url("/quick.bin"),
        server.url("/slow.bin"),
        server.url("/missing.bin"), server.url("/cli.bin"), venv + "/bin/aria2p",
      ])
    // A bound against a hang: the script's own waits are far shorter.
    let run = await boundedWait(child, seconds: 240)
    let outcome = await daemon.stop()
    #expect(run.status == 0, "\(run)")
    let report = try #require(
      run.stdout.split(separator: "\n").last.flatMap { try? JSONValue.parse(Array($0.utf8)) },
      "no report from the script: \(run)")
    for check in report["checks"]?.object?.members ?? [] {
      #expect(
        check.value == .bool(true), "aria2p: \(check.key) failed: \(report["details"]?[check.key] ?? .null)")
    }
    #expect((report["checks"]?.object?.members.count ?? 0) >= 14, "\(report)")
    #expect(
      FileManager.default.contents(atPath: directory.file("downloads/quick.bin").path).map(Array.init)
        == quick)
    #expect(
      FileManager.default.contents(atPath: directory.file("downloads/slow.bin").path).map(Array.init) == slow)
    #expect(
      FileManager.default.contents(atPath: directory.file("downloads/cli.bin").path).map(Array.init) == quick)
    // The slow one was resumed after the pause, not fetched again.
    #expect(server.requests(for: "/slow.bin").contains { $0.headers["Range"] != nil })
    #expect(outcome.status == 0, "\(outcome)")
  }

  /// Drives the daemon with aria2p; prints one JSON line: {"checks": {name: bool}, "details": {…}}.
  /// Every wait polls with a deadline, so that a broken daemon fails the check instead of hanging.
  static let driver = #"""
    import json, subprocess, sys, threading, time
    import aria2p, websocket

    port, secret, quick, slow, missing, cli_url, cli = sys.argv[1:8]
    checks, details = {}, {}

    def check(name, ok, detail=None):
        checks[name] = bool(ok)
        if not ok:
            details[name] = repr(detail)

    def wait(condition, seconds=60):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if condition():
                return True
            time.sleep(0.05)
        return False

    # Notifications over WebSocket: aria2p's listener, with a hook that says when it is connected.
    connected = threading.Event()
    original = websocket.create_connection
    def connect(*args, **kwargs):
        socket = original(*args, **kwargs)
        connected.set()
        return socket
    websocket.create_connection = connect
    seen, lock = [], threading.Lock()
    def note(kind):
        def handler(api, gid):
            with lock:
                seen.append((kind, gid))
        return handler

    api = aria2p.API(aria2p.Client(host="http://127.0.0.1", port=int(port), secret=secret, timeout=20))
    api.listen_to_notifications(
        threaded=True, timeout=1, on_download_start=note("start"), on_download_pause=note("pause"),
        on_download_stop=note("stop"), on_download_complete=note("complete"), on_download_error=note("error"))
    check("websocket connects", connected.wait(20))
    def notified(kind, gid):
        return wait(lambda: (kind, gid) in seen, 30)

    try:
        version = api.client.get_version()
        check("getVersion", "version" in version, version)

        download = api.add_uris([quick], options={"out": "quick.bin"})
        check("addUri gid", len(download.gid) == 16 and int(download.gid, 16) >= 0, download.gid)
        def complete(d):
            d.update()
            return d.is_complete
        check("quick completes", wait(lambda: complete(download)), download.status)
        check("quick length", download.completed_length == download.total_length == 200000,
              (download.completed_length, download.total_length))
        check("onDownloadComplete", notified("complete", download.gid), seen)
        check("files path", download.files[0].path.name == "quick.bin", download.files)

        held = api.add_uris([slow], options={"split": "1", "timeout": "600"})  # its first response stalls
        check("slow starts", wait(lambda: (held.update() or True) and held.completed_length > 0), held.status)
        check("onDownloadStart", notified("start", held.gid), seen)
        check("pause", api.pause([held]) == [True])
        check("paused", wait(lambda: (held.update() or True) and held.is_paused), held.status)
        check("onDownloadPause", notified("pause", held.gid), seen)
        stats = api.get_stats()
        check("getGlobalStat", stats.num_waiting >= 1 and stats.num_stopped_total >= 1, vars(stats))
        check("tellWaiting lists it", held.gid in [d.gid for d in api.get_downloads()])
        check("resume", api.resume([held]) == [True])
        check("slow completes", wait(lambda: complete(held), 90), held.status)

        broken = api.add_uris([missing], options={"max-tries": "1"})
        def failed():
            broken.update()
            return broken.has_failed
        check("missing fails", wait(failed), broken.status)
        check("error code", broken.error_code == "3", (broken.error_code, broken.error_message))
        check("onDownloadError", notified("error", broken.gid), seen)

        waiting = api.add_uris([slow], options={"pause": "true", "out": "never.bin"})
        options = api.get_options([waiting])[0]
        check("getOption", options.get("out") == "never.bin", options.get("out"))
        globals_ = api.get_global_options()
        globals_.max_concurrent_downloads = 3
        check("changeGlobalOption", api.get_global_options().max_concurrent_downloads == 3)
        check("remove", api.remove([waiting]) == [True])
        check("onDownloadStop", notified("stop", waiting.gid), seen)
        check("purge", api.purge())

        # A call over WebSocket (websocket-client, as aria2p's own listener connects): the answer
        # has the call's id; notifications may come before it on the same connection.
        socket = original(f"ws://127.0.0.1:{port}/jsonrpc", timeout=20)
        socket.send(json.dumps({"jsonrpc": "2.0", "id": "ws-1", "method": "aria2.getGlobalStat",
                                "params": ["token:" + secret]}))
        answer = {}
        for _ in range(50):
            answer = json.loads(socket.recv())
            if answer.get("id") == "ws-1":
                break
        socket.close()
        check("websocket call", answer.get("result", {}).get("numStopped") == "0", answer)  # purged above

        def run_cli(*arguments):
            return subprocess.run(
                [cli, "-H", "http://127.0.0.1", "-p", port, "-s", secret, *arguments],
                capture_output=True, text=True, timeout=60)
        stat = run_cli("call", "getglobalstat")
        check("cli call", stat.returncode == 0 and "numActive" in json.loads(stat.stdout), stat)
        added = run_cli("add", cli_url)
        check("cli add", added.returncode == 0, added)
        def cli_done():
            return any(d.is_complete and d.files[0].path.name == "cli.bin" for d in api.get_downloads())
        check("cli download completes", wait(cli_done), [(d.name, d.status) for d in api.get_downloads()])
        shown = run_cli("show")
        check("cli show", shown.returncode == 0 and "cli.bin" in shown.stdout, shown)
    finally:
        api.stop_listening()
        print(json.dumps({"checks": checks, "details": details}))
    """#
}
