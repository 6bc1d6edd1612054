import CPostgres
import FleetTestSupport
import Foundation
import Testing

@testable import Haul

@Suite struct PostgresAddressTests {
  @Test func thePasswordIsNeverShown() throws {
    let address = try PostgresAddress("postgresql://haul:s3cret-pw@db.example:5432/queue?sslmode=require")
    #expect(address.redacted == "postgresql://haul@db.example:5432/queue?sslmode=require")
    #expect(address.description == address.redacted)
    #expect(address.password == "s3cret-pw")
    #expect(address.scrubbed("FATAL: s3cret-pw is wrong") == "FATAL: *** is wrong")
  }

  @Test func aPasswordParameterIsRedactedToo() throws {
    let address = try PostgresAddress("postgres://db/queue?password=hunter22&application_name=x")
    #expect(address.redacted == "postgres://db/queue?application_name=x")
    #expect(address.password == "hunter22")
    let encoded = try PostgresAddress("postgresql://u:p%40ss%2Fword@h/d")
    #expect(encoded.password == "p@ss/word")
    #expect(encoded.redacted == "postgresql://u@h/d")
  }

  @Test func otherSchemesAndSpacesAreRefused() {
    for text in [
      "http://db/queue", "host=db dbname=queue", "postgresql://db/que ue", "postgresql://db/\u{7}",
    ] {
      #expect(throws: HaulError.self) { try PostgresAddress(text) }
    }
    #expect((try? PostgresAddress("mysql://x"))?.redacted == nil)
  }

  @Test func textArraysQuoteEveryElement() {
    #expect(
      PostgresTextArray(["a", "b\"c", "d\\e", nil, ""]).postgresText == #"{"a","b\"c","d\\e",NULL,""}"#)
    #expect(PostgresTextArray([]).postgresText == "{}")
  }
}

@Suite(
  .enabled(if: TemporaryPostgres.mustRun, "PostgreSQL is not installed (Debian: postgresql)"),
  .timeLimit(.minutes(6)))
struct PostgresConnectionTests {
  @Test func declarationsWereProvenAgainstTheRealHeader() {
    // Wherever libpq-fe.h is installed (CI installs libpq-dev), abi_check.c must have compiled
    // its static assertions.
    let header = ["/usr/include/postgresql/libpq-fe.h", "/usr/include/libpq-fe.h"].contains {
      FileManager.default.fileExists(atPath: $0)
    }
    #expect(cpq_abi_checked_against_headers() == (header ? 1 : 0))
  }

  @Test func connectsAndBindsParametersAsText() throws {
    let connection = try PostgresConnection(PostgresAddress(FleetTestDatabase.url()))
    #expect(connection.serverVersion >= 120_000)
    #expect(PostgresLibrary.version != nil)
    // A parameter that looks like SQL stays a value.
    let hostile = "x'); DROP TABLE pg_class; --"
    let rows = try connection.query("SELECT $1::text, $2::int + 1, $3::text IS NULL", [hostile, 41, nil])
    #expect(rows.count == 1)
    #expect(rows[0, 0] == hostile)
    #expect(rows[0, 1] == "42")
    #expect(rows.row(0).bool(2) == true)
    let array = try connection.query(
      "SELECT array_length($1::text[], 1), ($1::text[])[2]", [PostgresTextArray(["a", "b\"\\,{}", nil])])
    #expect(array[0, 0] == "3")
    #expect(array[0, 1] == "b\"\\,{}")
  }

  @Test func failedStatementsCarryTheirSQLState() throws {
    let connection = try PostgresConnection(PostgresAddress(FleetTestDatabase.url()))
    do {
      try connection.query("SELECT * FROM no_such_table")
      Issue.record("expected an error")
    } catch {
      #expect(error.sqlState == "42P01")
      #expect(!error.lostConnection)
      let haul = error.haulError(connection.address)
      #expect(haul.message.contains("no_such_table"))
      #expect(haul.message.contains("42P01"))
    }
    // The connection is still usable, and a failed transaction was rolled back.
    #expect(throws: PostgresError.self) {
      try connection.transaction { () throws(PostgresError) in
        try connection.query("CREATE TABLE t (x int)")
        try connection.query("SELECT 1/0")
      }
    }
    #expect(!connection.isInFailedTransaction)
    #expect(try connection.query("SELECT to_regclass('t') IS NULL").row(0).bool(0) == true)
  }

  @Test func aWrongPasswordIsAnAuthenticationErrorThatDoesNotShowIt() throws {
    let server = try TemporaryPostgres.shared()
    let wrong = "wrong-password-4321"
    do {
      _ = try PostgresConnection(PostgresAddress(server.url(password: wrong)))
      Issue.record("expected an error")
    } catch {
      #expect(error.category == .authentication)
      #expect(!error.message.contains(wrong))
      #expect(!(error.hint ?? "").contains(wrong))
      #expect(error.message.contains("postgresql://haul@127.0.0.1:\(server.port)/postgres"))
    }
  }

  @Test func nobodyListeningIsANetworkError() throws {
    // Port 1: no test binds it (a freed port may be taken by another test's server meanwhile).
    let address = try PostgresAddress("postgresql://haul:pw-not-shown@127.0.0.1:1/x")
    do {
      _ = try PostgresConnection(address)
      Issue.record("expected an error")
    } catch {
      #expect(error.category == .network)
      #expect(!error.message.contains("pw-not-shown"))
      #expect(error.hint != nil)
    }
  }

  @Test func aMissingDatabaseSaysToCreateIt() throws {
    let server = try TemporaryPostgres.shared()
    do {
      _ = try PostgresConnection(PostgresAddress(server.url(database: "no_such_db")))
      Issue.record("expected an error")
    } catch {
      #expect(error.category == .invalidInput)
      #expect(error.hint?.contains("createdb") == true)
    }
  }
}
