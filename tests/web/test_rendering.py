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


# Incident and device references in agent text (web_app.rendering.linkify).


def test_incident_references_link_to_the_incident_page_and_http_statuses_do_not():
    from web_app.rendering import render_answer

    html = render_answer("See incident #12 and INC-7: nginx answers 502 on port 443.")
    assert '<a class="ref-incident" href="/incidents/12/">incident #12</a>' in html
    assert '<a class="ref-incident" href="/incidents/7/">INC-7</a>' in html
    assert "/incidents/502/" not in html and "/incidents/443/" not in html


def test_device_names_link_only_outside_code_and_existing_links():
    from web_app.rendering import EstateLinks, render_answer

    links = EstateLinks({"web-01": "/admin/ops_app/device/3/change/"})
    html = render_answer(
        "**web-01** is full; run `du` on web-01. web-010 is another host. [web-01](https://x/)", links
    )
    assert html.count('class="ref-device"') == 2  # the bold one and the plain one
    assert "<code>du</code>" in html and "web-010 is another" in html
    assert '<a href="https://x/" rel="noopener noreferrer nofollow">web-01</a>' in html


def test_device_links_open_the_devices_own_page_for_members_and_admins(client, org, member, org_admin):
    from django.contrib.auth.models import AnonymousUser

    from ops_app.models import Device
    from web_app.rendering import estate_links

    device = Device.objects.create(organization=org, name="web-01", address="10.0.0.1")
    page = f"/devices/{device.pk}/"
    assert estate_links(org.pk, member).devices == {"web-01": page}  # not the admin's edit form
    assert estate_links(org.pk, org_admin).devices == {"web-01": page}
    assert estate_links(org.pk, AnonymousUser()).devices == {}
    client.force_login(member)
    assert client.get(page).status_code == 200 and "web-01" in client.get(page).content.decode()


def test_linkify_does_not_open_a_hole_in_the_sanitiser():
    from web_app.rendering import EstateLinks, render_answer

    html = render_answer(
        '<a href="javascript:x">INC-1</a> <img onerror=x> incident #3', EstateLinks({"x": "/d/"})
    )
    assert "javascript:" not in html and "onerror" not in html
    assert 'href="/incidents/3/"' in html
