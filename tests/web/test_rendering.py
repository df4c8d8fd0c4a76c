from web_app.rendering import render_markdown


def test_markdown_keeps_links_code_and_lists():
    html = render_markdown(
        "**Disk** on `web-01`:\n\n- /var/log 38G\n\n```\ndu -sh /var\n```\n\n[runbook](https://wiki/disk)"
    )
    assert "<strong>Disk</strong>" in html
    assert "<code>web-01</code>" in html
    assert "<li>/var/log 38G</li>" in html
    assert "<pre><code>du -sh /var" in html
    assert 'href="https://wiki/disk"' in html and 'rel="noopener noreferrer nofollow"' in html


def test_scripts_handlers_and_javascript_urls_are_removed():
    html = render_markdown(
        '<script>alert(1)</script><img src=x onerror="alert(2)"> '
        '[x](javascript:alert(3)) <b onclick="e()">b</b>'
    )
    assert "<script" not in html and "alert(1)" not in html
    assert "onerror" not in html and "<img" not in html
    assert "javascript:" not in html
    assert "onclick" not in html and "<b>b</b>" in html
