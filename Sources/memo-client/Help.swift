import MemoClient

/// `memo-client --help`.
let helpText: String = {
    var text = """
        usage: memo-client [options] COMMAND [arguments]
               memo-client [options] [--locale ID]       (on a terminal: the interactive front end)

        Reads and writes the memos of a memo server over mutual TLS. With no command, on a terminal, it opens
        the terminal front end: the list, live as other clients change it, a detail and an editor (? shows the
        keys). It starts from the cached list when the server is away and says so in the status bar; writes
        made meanwhile show at once as pending and are sent when the server is back.

        Commands:
          list [--filter TEXT] [--limit N]  memos, newest first (--filter: case-insensitive text in the content)
          show ID                           one memo, all of its content
          add TEXT...                       a new memo (the words joined by spaces); add - reads stdin
          edit ID TEXT... | edit ID -       replace a memo's content [--if-revision N]
          rm ID                             delete a memo [--if-revision N]
          watch                             the list, then one line per change as it happens; resumes
                                            across server restarts without missing or repeating a change
          export                            every memo as JSON lines (lossless)
          import FILE | import -            memos from export output; importing a file twice changes nothing

        An ID may be abbreviated to any unique prefix of it. Text read from stdin loses one final newline.

        Options:
          --server HOST:PORT    the server (env MEMO_SERVER, default 127.0.0.1:7420)
          --certs DIR           folder with ca.crt, client.crt and client.key (env MEMO_CERTS, default certs)
          --ca FILE             the CA that signed the server's certificate (instead of DIR/ca.crt)
          --cert FILE           our client certificate (instead of DIR/client.crt)
          --key FILE            its private key (instead of DIR/client.key)
          --timeout SECONDS     how long a request may take, connecting included (default 10)
          --if-revision N       edit, rm: only if the memo is still at revision N
          --locale ID           front end: the locale of its words and dates, e.g. ko_KR (Korean)
                                (default: LC_ALL, LC_MESSAGES or LANG for words; LC_ALL, LC_TIME
                                or LANG for dates)
          --json                one JSON object per memo per line: id, content, insertDate, updateDate
                                (ISO 8601, UTC, microseconds), revision; watch --json prints
                                {"type":"created"|"updated"|"deleted","revision":N,"memo":{...}} per change
          -h, --help            this help

        Environment: MEMO_TLS_RECORDS=own|openssl chooses who protects TLS 1.3 records after the handshake:
        the client's own record layer (default) or OpenSSL's.

        Output is a table for people when stdout is a terminal (short id, local date, first line; colors
        unless NO_COLOR is set) and tab-separated when it is not:
          list, add, edit, rm:  id<TAB>revision<TAB>insertDate<TAB>first line
          watch changes:        created|updated|deleted<TAB>id<TAB>revision<TAB>updateDate<TAB>first line
          show:                 the content as it is
        Errors go to stderr, one line each.

        Exit codes:

        """
    for code in ExitCode.allCases {
        text += "  \(code.rawValue)  \(code.meaning)\n"
    }
    return text
}()
