"""Online backups (the `backup` capability): the SDK declares it for a store
class with a `backup` classmethod and dispatches `backup` with its path;
`dump` with a `path` reads the store's part of that backup through the
store's own `dump`, and a backup whose file is gone says so. The example
copies with SQLite's backup API (WAL included); `--bug backup_db_file_only`
copies the main file alone and leaves the WAL's commits behind."""

import os

from tests.driver import AdapterCase, append_two


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
