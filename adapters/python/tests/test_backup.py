"""Online backups (the `backup` capability): the SDK declares it for a store
class with a `backup` classmethod and dispatches `backup` with its path;
`dump` with a `path` reads the store's part of that backup through the
store's own `dump`, and a backup whose file is gone says so. The example
copies with SQLite's backup API (WAL included); `--bug backup_db_file_only`
copies the main file alone and leaves the WAL's commits behind, and `--bug
backup_file_set_unlocked` copies the file set in two parts (`-wal`, then a
checkpoint and the main file), which tears when the store grew between."""

import os

from tests.driver import AdapterCase, append_two, command


class SdkBackupTest(AdapterCase):
    def appended(self, *args):
        """The example set up, one append committed (still in the WAL)."""
        self.setup_example(*args)
        store = self.spawn(*args, "--granularity", "call")
        store.ok("open", role="store")
        append_two(store)
        return store

    def backup(self, *args):
        path = os.path.join(self.dir, "store.db.backup-1")
        backup = self.spawn(*args, purpose="backup")
        self.assertEqual(backup.ok("backup", path=path), {})
        backup.close()
        dumper = self.spawn(*args, purpose="dump")
        state = dumper.ok("dump", path=path)
        dumper.close()
        return state

    def test_the_example_declares_backup(self):
        self.assertIn("backup", self.spawn().hello["capabilities"])

    def test_a_backup_holds_the_commits_the_wal_still_holds(self):
        store = self.appended()
        state = self.backup()
        self.assertEqual([event["seq"] for event in state["events"]], [1])
        self.assertEqual(len(state["outbox"]), 2)
        self.assertEqual(state["store_integrity"], "ok")
        self.assertNotIn("effects", state)
        store.close()

    def test_a_copy_of_the_main_file_alone_lacks_them(self):
        store = self.appended("--bug", "backup_db_file_only")
        state = self.backup("--bug", "backup_db_file_only")
        self.assertEqual(state["events"], [])
        store.close()

    def test_a_file_set_copied_in_parts_while_the_store_grows_is_torn(self):
        bug = ("--bug", "backup_file_set_unlocked")
        store = self.appended(*bug)
        path = os.path.join(self.dir, "store.db.backup-1")
        first = self.spawn(*bug, purpose="backup")
        self.assertEqual(first.ok("backup", path=path), {"more": True})
        first.close()
        self.assertTrue(os.path.exists(path + "-wal"), "the -wal file first")
        self.assertFalse(os.path.exists(path), "the main file in a later part")
        for seq in range(1, 200):
            store.ok(
                "append",
                workflow_id="w",
                expected_seq=seq,
                kind="e",
                payload='{"note": "%s"}' % ("x" * 200),
                commands=[command("a", "{}")],
            )
        second = self.spawn(*bug, purpose="backup")
        self.assertEqual(second.ok("backup", path=path, part=1), {})
        second.close()
        dumper = self.spawn(*bug, purpose="dump")
        state = dumper.ok("dump", path=path)
        dumper.close()
        # Pages from the first moment laid over a file from the second.
        self.assertTrue(
            state["store_integrity"].startswith("the backup is unreadable"), state
        )
        store.close()

    def test_a_damaged_backup_is_a_verdict_not_an_error(self):
        self.setup_example()
        path = os.path.join(self.dir, "store.db.backup-1")
        with open(path, "wb") as file:
            file.write(b"SQLite format 3\x00" + b"\xff" * 4080)
        dumper = self.spawn(purpose="dump")
        state = dumper.ok("dump", path=path)
        self.assertEqual((state["events"], state["outbox"]), ([], []))
        self.assertTrue(
            state["store_integrity"].startswith("the backup is unreadable"), state
        )

    def test_backup_parts_count_from_zero(self):
        self.setup_example()
        backup = self.spawn(purpose="backup")
        path = os.path.join(self.dir, "store.db.backup-1")
        self.assertEqual(backup.error("backup", path=path, part=-1)["kind"], "invalid")

    def test_a_backup_whose_file_is_gone_says_so(self):
        self.setup_example()
        dumper = self.spawn(purpose="dump")
        state = dumper.ok("dump", path=os.path.join(self.dir, "nowhere.db"))
        self.assertEqual(state["store_integrity"], "the backup's file is gone")
        self.assertFalse(os.path.exists(os.path.join(self.dir, "nowhere.db")))

    def test_backup_needs_a_path(self):
        self.setup_example()
        backup = self.spawn(purpose="backup")
        self.assertEqual(backup.error("backup")["kind"], "invalid")
